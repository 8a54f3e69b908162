"""Known-wrong: commits the batch's offsets *before* processing it (at most once).
A crash between the commit and the writes loses the batch: fails nothing_lost under
crash_consumer."""

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
        consumer.commit(asynchronous=False)
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        producer.flush(30)
