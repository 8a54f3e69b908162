"""Wrong: a correct transaction loop, with the consumer's auto-commit turned on.

The loop sends its offsets in the transaction, but ``enable.auto.commit: True`` also
commits the position of what ``consume()`` has returned, every 5 s, outside any
transaction. A timer commit that lands while a transaction is open moves the group past
records whose output is not committed: when the instance stalls there and a successor
takes over (or it dies there), the open transaction is aborted and the successor starts
after the batch: lost. A student turns it on because "the consumer should commit its
offsets", not seeing that the transaction already does; a crash right after one of the
loop's calls never lands between the timer's commit and the transaction's.
"""

from confluent_kafka import KafkaException, TopicPartition

EXPECTED_FAILURE = "zombie_producer x nothing_lost"

CONSUMER_SETTINGS = {"isolation.level": "read_committed", "enable.auto.commit": True}


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
