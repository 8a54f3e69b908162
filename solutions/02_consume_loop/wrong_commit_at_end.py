"""Known-wrong: writes every batch safely but commits only once, at the end. Nothing is
lost, but a crash makes the restarted stage redo everything since the start: fails
one_batch_redone under crash_consumer."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "crash_consumer x one_batch_redone"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "flush#2"

CONSUMER_SETTINGS = {"enable.auto.commit": False}


def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        producer.flush(30)
    consumer.commit(asynchronous=False)
