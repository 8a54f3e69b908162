"""Wrong: sends each partition's last offset (``m.offset()``), not the next one to read.

The offsets sent in the transaction are committed as the group's position, which means
"the next record to read". Sending the last processed record's own offset makes every
successor read that record again and write it in a new committed transaction: one
duplicate per partition after each crash. A student writes it because "commit what you
processed" reads naturally, and the off-by-one only shows after a restart.
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
        first, last = {}, {}
        for m in msgs:
            tp = (m.topic(), m.partition())
            first.setdefault(tp, m.offset())
            last[tp] = m.offset()
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for (t, p), o in last.items()],  # the bug: no + 1
                consumer.consumer_group_metadata())
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)
            for (t, p), o in first.items():
                consumer.seek(TopicPartition(t, p, o))
