"""Known-wrong: a correct transaction loop whose consumer reads uncommitted data, so it
copies the input's aborted transaction into committed output: fails exactly_once with no
fault at all."""

from confluent_kafka import TopicPartition

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "none x exactly_once"

CONSUMER_SETTINGS = {"isolation.level": "read_uncommitted"}


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
            last[(m.topic(), m.partition())] = m.offset() + 1
        producer.send_offsets_to_transaction(
            [TopicPartition(t, p, o) for (t, p), o in sorted(last.items())],
            consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
