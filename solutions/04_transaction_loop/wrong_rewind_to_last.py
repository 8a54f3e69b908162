"""Wrong: after an abort, seeks each partition back to the batch's *last* offset.

The student remembers that an abort needs a rewind, but seeks to the offset of the last
record seen per partition (the one place they already track for the offsets to send,
minus the + 1). The records before it in the aborted batch are skipped: the next
transaction starts at the last one and commits past them. Loss, only after an abort.
"""

from confluent_kafka import KafkaException, TopicPartition

EXPECTED_FAILURE = "hold_request x nothing_lost"

CONSUMER_SETTINGS = {"isolation.level": "read_committed"}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        last = {}
        for m in msgs:
            last[(m.topic(), m.partition())] = m.offset()
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o + 1) for (t, p), o in last.items()],
                consumer.consumer_group_metadata())
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)
            for (t, p), o in last.items():
                consumer.seek(TopicPartition(t, p, o))  # the bug: the batch's first offset
