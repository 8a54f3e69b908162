"""Known-wrong: commits after produce() returned, without waiting for the writes.
produce() only queues a record (linger.ms); a crash right after the commit loses what
was still queued: fails nothing_lost under crash_consumer."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "crash_consumer x nothing_lost"
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
        producer.poll(0)
        consumer.commit(asynchronous=False)
    producer.flush(30)
