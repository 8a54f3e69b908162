"""Correct, written differently from the reference: the offsets sent are the consumer's
own positions (``consumer.position(...)``: last consumed + 1) for the partitions the
batch touched, and an abort rewinds each of them to the group's *committed* offset
(``consumer.committed(...)``) rather than to the batch's first record.

The committed offset is, by construction, where the last committed transaction left the
group, so after an abort it is exactly where the redo must start (also if an earlier
transaction's fate was unsure). A partition without a committed offset starts from the
beginning, as ``auto.offset.reset=earliest`` would. A retriable commit error is retried,
an abortable one aborts and rewinds, anything else (fenced) stops the stage.
"""

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

CONSUMER_SETTINGS = {"isolation.level": "read_committed", "enable.auto.commit": False}

_RETRIES = 3


def _touched(msgs):
    return [TopicPartition(t, p) for t, p in sorted({(m.topic(), m.partition()) for m in msgs})]


def _rewind_to_committed(consumer, partitions):
    for tp in consumer.committed(partitions, timeout=30):
        start = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
        consumer.seek(TopicPartition(tp.topic, tp.partition, start))


def _commit(producer):
    for attempt in range(_RETRIES):
        try:
            producer.commit_transaction(30)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or attempt == _RETRIES - 1:
                raise


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        partitions = _touched(msgs)
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.send_offsets_to_transaction(consumer.position(partitions),
                                                 consumer.consumer_group_metadata(), 30)
            _commit(producer)
        except KafkaException as exc:
            err = exc.args[0]
            if err.fatal() or not err.txn_requires_abort():
                raise  # fenced or unrecoverable: a newer instance owns the work
            producer.abort_transaction(30)
            _rewind_to_committed(consumer, partitions)
