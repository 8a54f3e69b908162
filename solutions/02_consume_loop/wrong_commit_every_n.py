"""Wrong: commits every third batch, to save the round trip to the group coordinator.

Each batch is produced and flushed, so nothing unconfirmed is ever committed and nothing
is lost. But between two commits up to three flushed batches sit uncommitted: a crash
there makes the successor redo all of them, not just the one in flight. A student writes
it because "committing is expensive" is a common piece of tuning advice, and a crash
right after a commit (where a sampled kill tends to land) shows nothing.
"""

EXPECTED_FAILURE = "crash_consumer x one_batch_redone"
#: The crash point that exposes it: the calibration grades it there (bench/grade.py
#: searches every point, and says where each seed was caught).
EXPECTED_POINT = "flush#2"

CONSUMER_SETTINGS = {"enable.auto.commit": False}

COMMIT_EVERY = 3


def consume_loop(consumer, producer, output_topic, running):
    batches = 0
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        if producer.flush(30):
            raise RuntimeError("output not confirmed")
        batches += 1
        if batches % COMMIT_EVERY == 0:
            consumer.commit(asynchronous=False)
