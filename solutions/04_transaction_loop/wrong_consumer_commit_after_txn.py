"""Wrong: commits the transaction, then commits the input offsets with ``consumer.commit()``.

The order looks safe (output first, then offsets: at least once), but the two commits
are separate: a kill right after ``commit_transaction`` and before the consumer's commit
leaves the output committed and the offsets behind, so the successor writes the batch
again in a new committed transaction. Exactly once needs the offsets *inside* the
transaction. A student writes it because it is chapter 02's correct loop with a
transaction added around the produce calls.
"""

from confluent_kafka import KafkaException, TopicPartition

EXPECTED_FAILURE = "crash_consumer x exactly_once"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "commit_transaction#1"

CONSUMER_SETTINGS = {"isolation.level": "read_committed"}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        first = {}
        for m in msgs:
            first.setdefault((m.topic(), m.partition()), m.offset())
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)
            for (t, p), o in first.items():
                consumer.seek(TopicPartition(t, p, o))
            continue
        consumer.commit(asynchronous=False)
