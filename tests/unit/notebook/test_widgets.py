"""The failure-button panel's status line, without a cluster."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from deliverylab.history import History
from deliverylab.notebook import widgets


class NoMetadata:
    """A cluster whose metadata requests time out (its controller quorum is gone)."""

    def status(self) -> dict[int, str]:
        return {1: "up", 2: "paused", 3: "paused"}

    def admin(self):
        class Admin:
            def list_topics(self, topic, timeout):
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                                "Failed to get metadata: Local: Timed out"))
        return Admin()


def test_a_metadata_timeout_reads_as_words_not_a_struct_dump():
    panel = widgets.FaultPanel(NoMetadata(), None, [("Heal", lambda: "healed")],
                               topic="orders", history=History())
    text = panel.refresh()
    assert "leaders of orders: unknown (Failed to get metadata: Local: Timed out)" in text
    assert "KafkaError{" not in text and "KafkaError{" not in panel.status.value
