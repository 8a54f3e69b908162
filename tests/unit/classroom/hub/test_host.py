"""What a host prepares for a class, without preparing it: whether every student can
reach a path."""

from __future__ import annotations

import os
from pathlib import Path

from deliverylab.classroom.hub import host


def test_reachable_follows_every_folder_above(tmp_path: Path):
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "f").write_text("x")
    (inner / "f").chmod(0o644)
    for p in (tmp_path / "a", inner):
        p.chmod(0o755)
    blocked = all(os.stat(p).st_mode & 0o001 for p in tmp_path.parents) is False
    assert host.reachable(inner / "f") is (not blocked)
    (tmp_path / "a").chmod(0o700)
    assert host.reachable(inner / "f") is False
