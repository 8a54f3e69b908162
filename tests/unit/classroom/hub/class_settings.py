"""A hub's settings for the unit tests of the hub's rooms: two students, a shared
password, the state in the test's folder."""

from __future__ import annotations

from pathlib import Path

from deliverylab.classroom.hub.settings import HubSettings


def settings(tmp_path: Path, **kw) -> HubSettings:
    return HubSettings(**{"students": ["ann", "ben"], "password": "workshop-pw",
                          "state": str(tmp_path / "state"), **kw})
