"""The default (auto-committing) consumer under a crash, on real brokers: librdkafka's
defaults lose the rest of the batch; storing offsets after processing loses nothing."""

from __future__ import annotations

import uuid

import pytest

from deliverylab.chapters.at_least_once.autocommit import default_consumer_crash

pytestmark = pytest.mark.cluster


def test_default_offset_store_commits_the_unprocessed_rest_of_the_batch(cluster):
    run = default_consumer_crash(cluster, f"ac-{uuid.uuid4().hex[:6]}", store="default",
                                 values=20, batch=8, process=3)
    assert run.exit_code == -9
    assert run.committed_at_crash == 8  # the whole poll, of which 3 were processed
    assert run.missing == run.handed[3:] and len(run.missing) == 5
    assert run.twice == []


def test_store_after_processing_commits_only_what_was_processed(cluster):
    run = default_consumer_crash(cluster, f"ac-{uuid.uuid4().hex[:6]}",
                                 store="after_processing", values=20, batch=8, process=3)
    assert run.committed_at_crash == 3
    assert run.missing == []
    assert run.redone[0] == run.handed[3]
