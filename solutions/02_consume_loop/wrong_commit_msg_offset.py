"""Wrong: commits each partition's last message offset, ``m.offset()``, not the next one.

A committed offset is the position of the *next* record to read. Committing the offset
of the last processed record means a restarted instance reads that record again: every
crash redoes one record per partition more than the batch in flight. A student writes it
because "commit the offset of what I processed" sounds right, and the record redone is
a duplicate, never a loss, so nothing looks broken.
"""

from confluent_kafka import TopicPartition

EXPECTED_FAILURE = "crash_consumer x one_batch_redone"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "commit#1"

CONSUMER_SETTINGS = {"enable.auto.commit": False}


def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        if producer.flush(30):
            raise RuntimeError("output not confirmed")
        last = {}
        for m in msgs:
            last[(m.topic(), m.partition())] = m.offset()  # the bug: no + 1
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in last.items()],
                        asynchronous=False)
