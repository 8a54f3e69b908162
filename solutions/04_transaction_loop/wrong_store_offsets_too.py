"""Wrong: chapter 02's offset store carried into the transaction loop, "to be safe".

The loop sends its offsets in the transaction, as it must, and also stores them with the
consumer (``store_offsets``, auto-commit on, ``enable.auto.offset.store`` off: chapter
02's correct pattern) right after writing the batch, before ``commit_transaction``. The
store is sent by auto-commit's timer, outside the transaction: a timer that fires while
the transaction is open commits the group past a batch whose output may still abort.
When the instance then stalls and a successor takes over (and aborts the open
transaction), the successor starts after the batch: lost. A student writes it because
the store looked like the at-least-once half of "offsets after output", and a crash
right after a call never lands between the timer's commit and the transaction's.
"""

from confluent_kafka import KafkaException, TopicPartition

EXPECTED_FAILURE = "zombie_producer x nothing_lost"

CONSUMER_SETTINGS = {"isolation.level": "read_committed", "enable.auto.commit": True,
                     "enable.auto.offset.store": False}


def transaction_loop(consumer, producer, output_topic, running):
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        first, nxt = {}, {}
        for m in msgs:
            tp = (m.topic(), m.partition())
            first.setdefault(tp, m.offset())
            nxt[tp] = m.offset() + 1
        offsets = [TopicPartition(t, p, o) for (t, p), o in nxt.items()]
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(output_topic, m.value(), key=m.key())
            producer.send_offsets_to_transaction(offsets,
                                                 consumer.consumer_group_metadata())
            consumer.store_offsets(offsets=offsets)  # the bug: committed by the timer
            producer.commit_transaction(30)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(30)
            for (t, p), o in first.items():
                consumer.seek(TopicPartition(t, p, o))
