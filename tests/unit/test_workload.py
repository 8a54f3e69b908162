"""Workload pieces that need no cluster: the background stream and its schedule."""

from __future__ import annotations

import pytest

from deliverylab.errors import BadValue
from deliverylab.workload import CRASH_POINTS, Pipeline


def test_crash_points_are_one_per_commit_strategy_and_checked_before_running():
    assert CRASH_POINTS == {"before": "after_commit_before_process",
                            "after": "after_process_before_commit",
                            "transaction": "mid_transaction"}
    stage = Pipeline("127.0.0.1:1", "in", "out", "TRANSACTIONAL")
    with pytest.raises(BadValue, match="mid_transaction"):
        stage.run(crash_after=5, crash_point="after_process_before_commit")
    with pytest.raises(BadValue, match="stall_after"):
        Pipeline("127.0.0.1:1", "in", "out", "AT_MOST_ONCE").run(stall_after=3)
    with pytest.raises(BadValue, match="crash_after"):
        stage.run(crash_after=0)
