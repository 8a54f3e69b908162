"""Correct, written differently from the reference: the store-then-commit pattern.

``enable.auto.offset.store`` is off, so ``consume()`` no longer marks records as done;
the loop stores a message's offset (``store_offsets(message=m)`` stores ``offset + 1``)
only once its copy's delivery report came back successful, and then commits what is
stored with an offset-less ``commit()``. What gets committed is exactly what was
confirmed, record by record, never what was merely fetched.
"""

CONSUMER_SETTINGS = {"enable.auto.commit": False, "enable.auto.offset.store": False}


def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        reports = {}

        def report(err, _copy, reports=reports):
            reports[len(reports)] = err

        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key(), on_delivery=report)
        producer.flush(30)
        failures = [err for err in reports.values() if err is not None]
        if len(reports) != len(msgs) or failures:
            raise RuntimeError(f"{len(msgs) - len(reports)} record(s) without a delivery "
                               f"report, failures {failures}: stopping uncommitted")
        for m in msgs:
            consumer.store_offsets(message=m)
        consumer.commit(asynchronous=False)  # offset-less: commits the stored offsets
