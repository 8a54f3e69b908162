"""Wrong: produces the batch, commits, and only then flushes.

``produce()`` only queues the record in the producer (it lingers 100 ms); the commit
goes out at once. A crash after the commit and before the flush loses the queued
records: the input says they are done, the output never got them. A student writes it
because every call is there, in an order that reads naturally ("hand it over, mark it,
wait for the network"), and the flush still happens on every normal run.
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
        consumer.commit(asynchronous=False)
        if producer.flush(30):
            raise RuntimeError("output not confirmed")
