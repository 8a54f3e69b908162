"""The solo part's list: the parallel part's collection names the modules of the solo
tests, and scripts/test-suite.sh gives each pytest of the solo part those modules only.
The script runs for real here, with a stand-in for Python that records how it was called
(and, as the parallel part, writes the list as the collection would)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.lanes import SOLO_LIST, write_solo_list

ROOT = Path(__file__).resolve().parents[2]

#: Stands in for Python: one line per call (its arguments), and as the parallel part
#: (``-n``) it writes $LIST_TEXT to the file the script names in $DELIVERYLAB_SOLO_LIST.
FAKE = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
case " $* " in
  *" -n "*) [ -n "$DELIVERYLAB_SOLO_LIST" ] && printf '%b' "$LIST_TEXT" > "$DELIVERYLAB_SOLO_LIST";;
esac
exit 0
"""

SOLO = {("alone", "tests/labs/test_chapters.py"),
        ("lane_docker", "tests/integration/test_docker_lab.py"),
        ("lane_docker", "tests/browser/test_book.py"),
        ("lane_host", "tests/integration/classroom/test_hub.py")}


def test_the_list_is_one_sorted_line_per_kind_and_module(tmp_path: Path):
    path = tmp_path / "solo-tests.txt"
    write_solo_list(path, SOLO)
    write_solo_list(path, SOLO)  # a second worker's: the same file, whole
    assert path.read_text().splitlines() == [
        "alone\ttests/labs/test_chapters.py",
        "lane_docker\ttests/browser/test_book.py",
        "lane_docker\ttests/integration/test_docker_lab.py",
        "lane_host\ttests/integration/classroom/test_hub.py"]
    assert [p.name for p in tmp_path.iterdir()] == ["solo-tests.txt"]


def suite(tmp_path: Path, listed: set[tuple[str, str]], *args: str) -> list[str]:
    """Run a copy of scripts/test-suite.sh with the stand-in; its calls, in order (the
    Docker lane's runs in the background, so it is sorted in by the test)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "test-suite.sh", tmp_path / "scripts")
    fake = tmp_path / "python"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    calls = tmp_path / "calls"
    text = "".join(f"{k}\\t{m}\\n" for k, m in sorted(listed))
    env = {**os.environ, "CALLS": str(calls), "LIST_TEXT": text, "DELIVERYLAB_PREBUILD": "0"}
    env.pop(SOLO_LIST, None)
    env.pop("SETUP", None)
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "test-suite.sh"), str(fake), "3",
                           *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return calls.read_text().splitlines()


def test_each_solo_pytest_collects_only_the_modules_of_its_kind(tmp_path: Path):
    calls = suite(tmp_path, SOLO)
    assert calls[0] == "-m pytest -n 3 --dist loadscope --no-loadscope-reorder -m not solo"
    assert calls[1] == "-m pytest -m solo and alone tests/labs/test_chapters.py"
    assert sorted(calls[2:]) == [
        "-m pytest -m solo and lane_docker tests/browser/test_book.py "
        "tests/integration/test_docker_lab.py",
        "-m pytest -m solo and lane_host tests/integration/classroom/test_hub.py"]
    assert (tmp_path / "build" / "solo-tests.txt").exists()


def test_a_kind_the_list_does_not_name_runs_no_pytest(tmp_path: Path):
    calls = suite(tmp_path, {k for k in SOLO if k[0] == "lane_host"})
    assert calls[1:] == [
        "-m pytest -m solo and lane_host tests/integration/classroom/test_hub.py"]


@pytest.mark.parametrize("args", [["tests/unit/test_lanes.py"], ["-k", "hub and not docker"]])
def test_a_narrowed_run_keeps_its_own_arguments_and_writes_no_list(tmp_path: Path, args):
    calls = suite(tmp_path, SOLO, *args)
    shown = " ".join(args)
    assert calls[0] == ("-m pytest -n 3 --dist loadscope --no-loadscope-reorder -m not solo "
                        + shown)
    assert calls[1] == f"-m pytest -m solo and alone {shown}"
    assert sorted(calls[2:]) == [f"-m pytest -m solo and lane_docker {shown}",
                                 f"-m pytest -m solo and lane_host {shown}"]
    assert not (tmp_path / "build" / "solo-tests.txt").exists()
