"""Wrong: checks delivery, but on a failed batch logs and carries on with the next one.

The loop does refuse to commit a batch that was not confirmed; then it moves on. The
consumer's position is already past the failed batch, so the next good batch's commit
covers the failed records too: they are skipped for good. A student writes it because
"a service must not crash on one bad batch" and the except clause looks defensive.
"""

import sys

EXPECTED_FAILURE = "hold_request x nothing_lost"  # 02's live fault: a write that fails for good

CONSUMER_SETTINGS = {"enable.auto.commit": False}


def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        failed = []
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key(),
                             on_delivery=lambda err, _m, failed=failed: err and failed.append(err))
        try:
            if producer.flush(30) or failed:
                raise RuntimeError(f"output not confirmed: {failed}")
            consumer.commit(asynchronous=False)
        except RuntimeError as exc:  # the bug: no rewind, the next commit passes it by
            print(f"batch failed, skipping: {exc}", file=sys.stderr)
