"""The hub's command line as the Makefile and the docs invoke it, ``python -m
deliverylab.classroom.hub``: the package runs its ``__main__``, and a bad command is
refused before anything is made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LIB = Path(__file__).resolve().parents[4] / "lib"


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(LIB) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "deliverylab.classroom.hub", *args],
                          capture_output=True, text=True, timeout=60, env=env)


def test_the_documented_invocation_answers_with_its_commands():
    got = run("--help")
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("usage: python -m deliverylab.classroom.hub")
    assert "{start,sweep}" in got.stdout
    for command in ("start", "sweep"):
        assert run(command, "--help").returncode == 0


def test_sweep_without_its_state_is_refused_in_one_line():
    got = run("sweep")
    assert got.returncode == 2 and "--state" in got.stderr.splitlines()[-1]
