"""Reference solution of exercise 02: process the batch, make sure it is written, then
commit; never commit what the producer has not confirmed. Kept out of labs/ on purpose.
"""

CONSUMER_SETTINGS = {"enable.auto.commit": False}


def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        errors = []

        def note(err, _msg, errors=errors):
            if err is not None:
                errors.append(err)

        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key(), on_delivery=note)
        if producer.flush(30) or errors:  # something not confirmed: do not commit it
            raise RuntimeError(f"output not confirmed ({errors or 'flush timed out'}): "
                               "stopping without committing, a restart redoes the batch")
        consumer.commit(asynchronous=False)
