"""readers.bounds against a partition whose commit marker lands mid-question.

No cluster: a stand-in admin answers ListOffsets from a log that gains its commit
marker after the n-th request, which is the race a real broker gives at random.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import IsolationLevel
from confluent_kafka.admin import OffsetSpec

from deliverylab import readers


class MarkerLandsMidway:
    """One partition: one transactional record, its marker written after ``after`` requests.

    Before the marker: high watermark 1, LSO 0 (held back). After: HW 2, LSO 2.
    """

    def __init__(self, after: int) -> None:
        self.after = after
        self.asked = 0

    def admin(self) -> MarkerLandsMidway:
        return self

    def list_topics(self, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(topics={"t": SimpleNamespace(partitions={0: None})})

    def list_offsets(self, request: dict, isolation_level: IsolationLevel,
                     request_timeout: float) -> dict:
        landed = self.asked >= self.after
        self.asked += 1
        if isinstance(next(iter(request.values())), OffsetSpec.earliest().__class__):
            offset = 0
        elif isolation_level == IsolationLevel.READ_COMMITTED:
            offset = 2 if landed else 0
        else:
            offset = 2 if landed else 1
        answer = SimpleNamespace(result=lambda: SimpleNamespace(offset=offset))
        return {tp: answer for tp in request}


@pytest.mark.parametrize("after", [0, 1, 2, 3])
def test_the_stable_offset_never_comes_out_above_the_high_watermark(after: int) -> None:
    (b,) = readers.bounds(MarkerLandsMidway(after), "t")
    assert b["last_stable_offset"] <= b["high_watermark"], b


def test_wait_stable_returns_only_a_settled_view() -> None:
    (b,) = readers.wait_stable(MarkerLandsMidway(2), "t", timeout=5)
    assert b["last_stable_offset"] == b["high_watermark"] == 2
