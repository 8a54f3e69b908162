"""Chapter 07's pure logic: the source file, the prediction, the counts."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from deliverylab import values as V
from deliverylab.chapters.exactly_once_sources.sources import (
    Runs,
    SourceFile,
    after,
    copies,
    missing,
)
from deliverylab.checker import extra_copies
from deliverylab.errors import BadValue
from deliverylab.history import Read


def test_source_file_writes_one_lab_value_per_line_and_knows_each_end(tmp_path: Path):
    source = SourceFile(tmp_path / "s.txt")
    assert source.size == 0 and source.values == []
    assert source.append(3) == ["line:0", "line:1", "line:2"]
    raw = (tmp_path / "s.txt").read_bytes()
    assert source.size == len(raw) and raw.count(b"\n") == 3
    lines = raw.splitlines()
    assert [str(V.decode(x)) for x in lines] == source.values
    assert source.ends[0] == len(lines[0]) + 1
    source.append(1)
    assert source.values[-1] == "line:3"
    with pytest.raises(BadValue, match="^count="):
        source.append(0)


def test_after_counts_the_lines_a_task_reads_again_from_a_position():
    ends = [10, 20, 30, 40]
    assert after(ends, None) == 4  # nothing committed: everything again
    assert after(ends, 0) == 4
    assert after(ends, 20) == 2  # committed after line 2: lines 3 and 4 again
    assert after(ends, 40) == 0  # the whole file committed: no duplicate
    assert after([], None) == 0


def _reads(*values: str | None) -> list[Read]:
    return [Read("t", 0, i, v) for i, v in enumerate(values)]


def test_duplicates_and_missing_count_values_not_records():
    reads = _reads("line:0", "line:1", "line:0", "line:0", None)
    assert copies(reads)["line:0"] == 3
    assert extra_copies(r.value for r in reads) == 2
    assert missing(reads, ["line:0", "line:1", "line:2"]) == ["line:2"]
    assert extra_copies(r.value for r in _reads()) == 0


class _Zombies(Runs):
    """Runs whose zombie run only records when it ran, on which thread, after which heal."""

    def __init__(self, tmp_path: Path, fail: object = None) -> None:
        super().__init__(SimpleNamespace(workdir=tmp_path), nemesis=None, lines=1)
        self.fail, self.events = fail, []

    def _heal(self, connect):
        self.events.append(("heal", connect))

    def zombie(self, connect, rate=20.0, after_resume=6.0):
        self.events.append(("start", connect))
        time.sleep(0.2)  # both must be under way before either ends
        if connect is self.fail:
            raise RuntimeError(f"zombie on {connect} broke")
        self.events.append(("end", connect))
        return (connect, threading.current_thread().name)


def test_zombies_heal_every_cluster_first_then_run_side_by_side(tmp_path: Path):
    runs = _Zombies(tmp_path)
    results = runs.zombies("plain", "eos")
    assert [r[0] for r in results] == ["plain", "eos"]  # in the order asked
    assert len({r[1] for r in results}) == 2  # each on its own thread
    assert all(r[1].startswith("zombie") for r in results)
    kinds = [kind for kind, _ in runs.events]
    assert kinds[:2] == ["heal", "heal"]  # a heal inside a run would wake the other's zombie
    assert kinds[2:4] == ["start", "start"]  # at the same time, not one after the other


def test_zombies_raise_a_run_s_error_in_the_caller_and_refuse_bad_input(tmp_path: Path):
    with pytest.raises(RuntimeError, match="zombie on eos broke"):
        _Zombies(tmp_path, fail="eos").zombies("plain", "eos")
    with pytest.raises(BadValue, match="^connects="):
        _Zombies(tmp_path).zombies()
    same = object()
    with pytest.raises(BadValue, match="^connects="):
        _Zombies(tmp_path).zombies(same, same)


def test_wait_count_raises_naming_the_count_it_saw_never_reads_on() -> None:
    # A count short of the prediction is an error that says how short, not a note
    # beside a read-back the chapter would go on to compare.
    from deliverylab.errors import TimedOut

    runs = SimpleNamespace(count=lambda topic, isolation: 7)
    with pytest.raises(TimedOut, match=r"waiting for 10 records of t under read_committed; "
                       r"7 records there") as err:
        Runs.wait_count(runs, "t", "read_committed", 10, 0.01)
    assert err.value.last_seen == "7 records there"
    assert Runs.wait_count(runs, "t", "read_committed", 7, 0.01) == 7
