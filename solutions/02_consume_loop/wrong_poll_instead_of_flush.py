"""Wrong: calls ``producer.poll(0)`` after producing, then commits.

``poll()`` serves delivery callbacks that are already due; it does not wait for the
records to be sent. With ``linger.ms`` at 100 the batch is still in the producer's queue
when the commit goes out, so a crash right after the commit loses it. A student writes
it because the docs' producer examples call ``poll(0)`` after ``produce()`` "to serve
delivery reports", and a final ``flush()`` at the end hides it on every clean run.
"""

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
