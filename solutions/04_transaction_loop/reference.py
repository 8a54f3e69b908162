"""Reference solution of exercise 04: the batch's output and the input offsets that
follow it (last offset + 1) commit in one transaction; an abortable error aborts and
rewinds to the batch; a fatal one (fenced: a newer instance runs) stops the stage.
Kept out of labs/ on purpose."""

from confluent_kafka import KafkaException, TopicPartition

CONSUMER_SETTINGS = {"isolation.level": "read_committed"}


def _next_offsets(msgs):
    last = {}
    for m in msgs:
        key = (m.topic(), m.partition())
        last[key] = max(last.get(key, -1), m.offset())
    return [TopicPartition(t, p, o + 1) for (t, p), o in sorted(last.items())]


def _rewind(consumer, msgs):
    first = {}
    for m in msgs:
        key = (m.topic(), m.partition())
        first[key] = min(first.get(key, m.offset()), m.offset())
    for (t, p), o in first.items():
        consumer.seek(TopicPartition(t, p, o))


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.send_offsets_to_transaction(
                _next_offsets(msgs), consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise  # fatal, e.g. fenced by a newer instance: this one must stop
            producer.abort_transaction(30)
            _rewind(consumer, msgs)  # the batch is redone in the next transaction
