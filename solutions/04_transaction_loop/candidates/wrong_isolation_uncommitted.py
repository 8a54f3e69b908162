"""Wrong: reads the input with ``isolation.level=read_uncommitted``.

Everything else is right, but a read_uncommitted consumer also returns the records of
the input's *aborted* transaction, and the loop copies them into committed output
transactions: values that never officially existed appear downstream. A student sets it
because "read_committed makes consumers wait at the last stable offset" (the chapter's
own section 3) and latency looks like the thing to fix.
"""

from confluent_kafka import KafkaException, TopicPartition

EXPECTED_FAILURE = "none x exactly_once"

CONSUMER_SETTINGS = {"isolation.level": "read_uncommitted"}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        first, nxt = {}, {}
        for m in msgs:
            tp = (m.topic(), m.partition())
            first.setdefault(tp, m.offset())
            nxt[tp] = m.offset() + 1
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for (t, p), o in nxt.items()],
                consumer.consumer_group_metadata())
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)
            for (t, p), o in first.items():
                consumer.seek(TopicPartition(t, p, o))
