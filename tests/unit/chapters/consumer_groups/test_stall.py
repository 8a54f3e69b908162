"""stall: the argument checks, before any instance starts (the stall itself runs against
a real broker in chapter 02b, tests/labs/test_chapters.py)."""

from __future__ import annotations

import pytest

from deliverylab.chapters import consumer_groups as kit
from deliverylab.errors import BadValue
from deliverylab.history import History
from deliverylab.modes import AT_LEAST_ONCE, AT_MOST_ONCE


class _NoCluster:
    """Any use of the cluster fails the test: the checks must come first."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the cluster was used ({name}) before the arguments were checked")


def test_a_mode_that_commits_before_processing_is_refused_in_one_line():
    with pytest.raises(BadValue, match=r"mode='AT_MOST_ONCE'.*commits after processing"):
        kit.stall_takeover(_NoCluster(), "in", "out", AT_MOST_ONCE, History(), group="g",
                           stall_after=5)


def test_a_stall_shorter_than_the_poll_interval_is_refused():
    mode = AT_LEAST_ONCE.with_consumer(max_poll_interval_ms=6000)
    with pytest.raises(BadValue, match=r"stall_seconds=5.*more than max.poll.interval.ms "
                                       r"\(6 s\)"):
        kit.stall_takeover(_NoCluster(), "in", "out", mode, History(), group="g",
                           stall_after=5, stall_seconds=5)


def test_the_kit_names_what_its_notebook_calls():
    assert set(kit.__all__) >= {"stall_takeover", "compare_rebalances", "rebalance_claims",
                                "plot_rebalances", "FLUSH_S", "LABELS"}
