"""Chapter 07's pure logic: the source file, the prediction, the counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab import values as V
from deliverylab.connect_runs import SourceFile, after, copies, duplicates, missing
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
    assert duplicates(reads) == 2
    assert missing(reads, ["line:0", "line:1", "line:2"]) == ["line:2"]
    assert duplicates(_reads()) == 0
