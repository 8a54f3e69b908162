"""Wrong: the textbook loop (offsets + 1 sent in the transaction) with no error handling.

Begin, produce, ``send_offsets_to_transaction``, commit: all right while every call
succeeds. When one raises an *abortable* error (a lost ``EndTxn`` or ``TxnOffsetCommit``
response, a timed-out request), the exception escapes the loop and the stage dies with
its transaction open, where the chapter asks the loop to abort, rewind and go on. A
student writes it because every example's happy path looks like this, and faults that
only kill the process never make a call fail.
"""

from confluent_kafka import TopicPartition

EXPECTED_FAILURE = "hold_request x finishes"

CONSUMER_SETTINGS = {"isolation.level": "read_committed"}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        producer.begin_transaction()
        nxt = {}
        for m in msgs:
            producer.produce(output_topic, m.value(), key=m.key())
            nxt[(m.topic(), m.partition())] = m.offset() + 1
        producer.send_offsets_to_transaction(
            [TopicPartition(t, p, o) for (t, p), o in nxt.items()],
            consumer.consumer_group_metadata())
        producer.commit_transaction(30)
