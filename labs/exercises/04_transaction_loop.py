"""Chapter 4 exercise: the consume-transform-produce transaction loop.

Your stage copies every committed record of an input topic to an output topic, exactly
once for read_committed readers. The lab runs this file in a process of its own, on a
real cluster, and breaks it: it SIGKILLs the process right after one of your calls --
each of your first polls, offset commits or sends and transaction commits in turn, one
run each -- and a fresh instance takes over; it holds one of your writes past
``message.timeout.ms``, so that a transactional call raises an *abortable* error while
your process runs; and it stalls your process with a transaction open (right before
your 2nd ``commit_transaction``) while a fresh instance takes over, then lets it go on:
a *zombie*, fenced. The input also holds one *aborted* transaction. Then the lab reads
the output with read_committed and checks:

- nothing lost: every committed input value is in the output;
- exactly once: no input value twice, and no value of the aborted input transaction;
- finishes: your loop returns once ``running()`` is False, without raising on an
  abortable error (a fatal one, such as being fenced by a newer instance, may end it).

Grade it from the chapter (``dl.grade("04")``) or a terminal::

    python -m deliverylab.grade 04 labs/exercises/04_transaction_loop.py

The contract (what the lab gives you):

- ``consumer``: a confluent_kafka ``Consumer`` subscribed to the input topic
  (``enable.auto.commit=False``, ``isolation.level=read_committed``, plus your
  ``CONSUMER_SETTINGS``). At most 10 messages per ``consume()``.
- ``producer``: a transactional confluent_kafka ``Producer``: ``init_transactions()``
  has been called. Every restart of your stage gets the same ``transactional.id``, so a
  new instance fences the one before it. A write with no answer within 3 s fails
  (``message.timeout.ms=3000``), and so does its transaction.
- ``output_topic``: where to write each record: same value, same key.
- ``running()``: True while there is input left to process.

Useful calls: ``producer.begin_transaction()``, ``producer.commit_transaction()``,
``producer.abort_transaction()``, ``producer.send_offsets_to_transaction(offsets,
consumer.consumer_group_metadata())``, ``consumer.seek(TopicPartition(...))``; a
``KafkaException``'s ``exc.args[0]`` is a ``KafkaError`` with ``txn_requires_abort()``
and ``fatal()``.

This starter writes each batch in a transaction, and it fails the grade: find out where.
"""

from confluent_kafka import KafkaException  # noqa: F401  (you will want it)

#: Extra consumer settings (librdkafka names).
CONSUMER_SETTINGS = {}


def transaction_loop(consumer, producer, output_topic, running):
    """Copy each committed input record to ``output_topic``, exactly once."""
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        if not msgs:
            continue
        producer.begin_transaction()
        for msg in msgs:
            producer.produce(output_topic, msg.value(), key=msg.key())
        producer.commit_transaction(30)
