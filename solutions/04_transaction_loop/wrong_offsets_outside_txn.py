"""Known-wrong: commits the transaction, then the input offsets with the consumer,
outside it. A crash between the two makes the restarted stage redo a committed batch:
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
        producer.commit_transaction(30)
        consumer.commit(offsets=[TopicPartition(m.topic(), m.partition(), m.offset() + 1)
                                 for m in msgs], asynchronous=False)
