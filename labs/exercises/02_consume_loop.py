"""Chapter 2 exercise: the consumer loop of a consume-and-produce stage.

Your stage copies every record of an input topic to an output topic. The lab runs this
file in a process of its own, on a real cluster, and breaks it: it SIGKILLs the process
right after one of your calls -- each of your first polls, flushes and commits in turn,
one run each -- and a fresh process in the same consumer group takes over; it loses an
acknowledgement of your producer; and it makes one of your writes fail for good (no
answer within ``message.timeout.ms``). Then it checks the output:

- nothing lost: every input value reaches the output topic;
- at most one batch redone: after a crash, the restarted stage redoes at most the batch
  that was in flight, and nothing your loop had committed (with no fault, nothing twice);
- finishes: your loop returns once ``running()`` is False, without raising -- except
  when a write failed for good: then raise without committing, and the lab restarts your
  stage, as a service manager would.

Grade it from the chapter (``dl.grade("02")``) or a terminal::

    python -m deliverylab.grade 02 labs/exercises/02_consume_loop.py

The contract (what the lab gives you):

- ``consumer``: a confluent_kafka ``Consumer``, already subscribed to the input topic.
  Ask for at most 10 messages at a time: ``consumer.consume(num_messages=10,
  timeout=0.5)``. Its settings are the lab's (``auto.offset.reset=earliest``,
  ``enable.auto.commit=False``) plus your ``CONSUMER_SETTINGS`` below. ``commit()``
  is made synchronously, whatever you pass.
- ``producer``: a confluent_kafka ``Producer`` (acks=all, retries; it batches records
  for 100 ms, ``linger.ms``; a write with no answer within 10 s fails for good,
  ``message.timeout.ms=10000``).
- ``output_topic``: where to write each record: same value, same key.
- ``running()``: True while there is input left to process.

This starter runs and copies every record, and it fails the grade: find out where.
"""

#: Extra consumer settings (librdkafka names). This is librdkafka's own default.
CONSUMER_SETTINGS = {"enable.auto.commit": True}


def consume_loop(consumer, producer, output_topic, running):
    """Copy each input record to ``output_topic`` until ``running()`` is False."""
    while running():
        for msg in consumer.consume(num_messages=10, timeout=0.5):
            if msg.error():
                continue
            producer.produce(output_topic, msg.value(), key=msg.key())
    producer.flush(30)
