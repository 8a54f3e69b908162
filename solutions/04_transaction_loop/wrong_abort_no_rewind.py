"""Wrong: on an abortable error it aborts the transaction and carries on, without seeking
the consumer back to the batch.

Aborting throws the batch's output away, but the consumer's position is already past the
batch: the next ``consume()`` returns the records after it, and the next transaction
commits offsets beyond it. The aborted batch is never written: data loss, silently. A
student writes it because "abort on error" is what every transactions tutorial shows,
and the rewind is the easy half to forget.
"""

from confluent_kafka import KafkaException, TopicPartition

EXPECTED_FAILURE = "hold_request x nothing_lost"

CONSUMER_SETTINGS = {"isolation.level": "read_committed"}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        producer.begin_transaction()
        try:
            nxt = {}
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
                nxt[(m.topic(), m.partition())] = m.offset() + 1
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for (t, p), o in nxt.items()],
                consumer.consumer_group_metadata())
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)  # the bug: no seek back to the batch
