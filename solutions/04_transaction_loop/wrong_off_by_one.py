"""Known-wrong: sends the offsets of the last records processed, not the next ones to
read (offset + 1). The restarted stage re-reads the last record of each partition:
fails exactly_once under crash_consumer."""

from confluent_kafka import TopicPartition

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "crash_consumer x exactly_once"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "commit_transaction#1"

CONSUMER_SETTINGS = {}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        producer.begin_transaction()
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        last = {}
        for m in msgs:
            last[(m.topic(), m.partition())] = m.offset()
        producer.send_offsets_to_transaction(
            [TopicPartition(t, p, o) for (t, p), o in sorted(last.items())],
            consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
