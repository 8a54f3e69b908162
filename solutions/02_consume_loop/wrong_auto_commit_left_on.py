"""Wrong: flushes every batch but leaves librdkafka's auto-commit on.

The starter's ``enable.auto.commit: True`` stays; the student adds a flush per batch and
believes that is enough. But the auto-commit thread commits the *consumed* position
every 5 s, whatever the loop has produced: a crash redoes everything since the last
timer commit (many batches, the whole input on a short run), and a timer commit that
lands between ``consume()`` and the flush commits records not yet written (lost if the
crash follows). A student writes it because the loop "never commits before the flush".
"""

# nothing_lost too, when a timer commit lands between consume() and the flush
EXPECTED_FAILURE = "crash_consumer x one_batch_redone"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "flush#2"

CONSUMER_SETTINGS = {"enable.auto.commit": True}


def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        if producer.flush(30):
            raise RuntimeError("output not confirmed")
