"""A real JupyterHub for the classroom tests: students with Unix users of their own.

Each hub gets a fresh user prefix (``dlt<hex>-``), its own ports and state folder, and
at teardown, pass or fail, stops the hub, the proxy and every server, sweeps every
process of its students and deletes their users and homes.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deliverylab.classroom import hub as hubmod
from deliverylab.process.ports import free_ports

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def class_cache() -> Path:
    """The class's read-only jars cache (made once; later runs only check it)."""
    return hubmod.prepare_cache()


@pytest.fixture
def start_hub(class_cache: Path) -> Iterator[Callable[..., hubmod.Hub]]:
    if os.geteuid() != 0:
        pytest.fail("the classroom tests create Unix users: run them as root (CI does)")
    started: list[hubmod.Hub] = []

    def start(students: list[str], **settings) -> hubmod.Hub:
        prefix = f"dlt{secrets.token_hex(2)}-"
        port, hub_port = free_ports(2)
        state = ROOT / "build" / f"test-hub-{prefix.rstrip('-')}"
        s = hubmod.HubSettings(students=students, password=secrets.token_urlsafe(12),
                               state=str(state), port=port, hub_port=hub_port,
                               prefix=prefix, cache=str(class_cache), **settings)
        hub = hubmod.Hub(s)
        started.append(hub)
        return hub.start()

    try:
        yield start
    finally:
        for hub in started:
            s = hub.settings
            hub.stop(remove_users=True)
            left = [u.pw_name for u in pwd.getpwall() if u.pw_name.startswith(s.prefix)]
            assert not left, f"the test's Unix users were not removed: {left}"
            assert not any(Path(s.home(n)).exists() for n in s.students)
            shutil.rmtree(s.state, ignore_errors=True)
