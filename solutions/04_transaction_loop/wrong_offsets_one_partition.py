"""Wrong: sends the offset of the batch's last message only, for that message's partition.

``TopicPartition(m.topic(), m.partition(), m.offset() + 1)`` for ``m = msgs[-1]`` is the
right offset for one partition; a batch that holds records of several partitions leaves
the others at their old committed offsets, and a successor copies those records again in
committed transactions. A student writes it after a single-partition example, and while
each fetch hands over one partition at a time it passes.
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
        last = msgs[-1]
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.send_offsets_to_transaction(
                [TopicPartition(last.topic(), last.partition(), last.offset() + 1)],
                consumer.consumer_group_metadata())
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)
            consumer.seek(TopicPartition(msgs[0].topic(), msgs[0].partition(),
                                         msgs[0].offset()))
