"""``make classroom-plan``'s measuring, smoke-sized: one chapter's stack (chapter 02's:
one broker, its fault proxy, the Spark driver) started in a child, sampled, stopped.
The figures themselves are a benchmark (``bench/classroom_plan.py``), not asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.classroom.sizing import measure

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def test_one_stack_is_measured_as_one_tree_and_leaves_nothing(tmp_path: Path):
    # measure_stack raises if a process of the stack outlives it
    row = measure.measure_stack("02", "light", tmp_path)
    # kernel stand-in, broker JVM, proxy, Spark JVM, reapers: a tree, not one process
    assert row["procs"] >= 4, row
    assert 100 * 2**20 < row["peak_pss"] <= row["peak_rss"], row
    assert 0 < row["start_wall_s"] < row["wall_s"] and row["start_cpu_s"] > 0, row
    assert row["cpu_s"] >= row["start_cpu_s"], row
