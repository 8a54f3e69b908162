"""Wrong: output in a transaction, input offsets left to the consumer's auto-commit.

The student wraps the produce calls in a transaction and turns auto-commit on, believing
the transaction makes the copy exactly once and the consumer will "keep up" with its
offsets. The offsets are not in the transaction: a kill right after a transaction
committed leaves the group's offset up to 5 s behind, and the successor writes those
records again, in committed transactions that read_committed readers see twice.
"""

EXPECTED_FAILURE = "crash_consumer x exactly_once"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "commit_transaction#1"

CONSUMER_SETTINGS = {"isolation.level": "read_committed", "enable.auto.commit": True}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        producer.begin_transaction()
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        producer.commit_transaction(30)
