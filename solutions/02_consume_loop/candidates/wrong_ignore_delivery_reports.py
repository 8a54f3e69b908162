"""Wrong: flushes, then commits, without looking at what the flush delivered.

``flush()`` waits until every record has a delivery report, and a report can be a
*failure* (``message.timeout.ms`` passed with the broker unreachable): the record is
dropped by the producer. This loop neither registers ``on_delivery`` nor checks the
count ``flush()`` returns, so it commits past records that never reached the output.
A student writes it because "flush before commit" is the lesson, and a flush that
returns normally looks like success.
"""

EXPECTED_FAILURE = "hold_request x nothing_lost"  # 02's live fault: a write that fails for good

CONSUMER_SETTINGS = {"enable.auto.commit": False}


def consume_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
        producer.flush(30)  # the bug: failed deliveries and the count left are ignored
        consumer.commit(asynchronous=False)
