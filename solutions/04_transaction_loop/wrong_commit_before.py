"""Known-wrong: commits the input offsets with the consumer before the transaction.
A crash inside the transaction aborts the output, but the offsets stay committed:
fails nothing_lost under crash_consumer."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "crash_consumer x nothing_lost"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "commit#1"

CONSUMER_SETTINGS = {}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        consumer.commit(asynchronous=False)
        producer.begin_transaction()
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        producer.commit_transaction(30)
