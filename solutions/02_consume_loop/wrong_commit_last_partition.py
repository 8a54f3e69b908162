"""Wrong: commits ``message=msgs[-1]``, i.e. only the partition of the batch's last message.

``commit(message=m)`` commits ``m.offset() + 1`` for *m's partition* only. When a batch
holds records of several partitions, the others keep their old committed offsets: a
crash redoes everything read from them since their last lucky commit, far more than the
batch in flight. A student writes it because the docs show ``commit(message=msg)`` in a
per-message loop, and while each fetch hands over one partition at a time it works.
The grader's input makes every batch span partitions (no partition holds a whole batch,
and its consume() hands over full batches), so the kill right after the first commit
catches it on every seed.
"""

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
        consumer.commit(message=msgs[-1], asynchronous=False)
