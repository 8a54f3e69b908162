"""Wrong: deduplicates on the message's offset alone, without its topic and partition.

An offset is only unique within one partition: partition 0's offset 5 and partition 1's
offset 5 are different messages, and the second one is taken for a repeat and never
written (a missing row). It does not catch the producer's duplicate either, which sits at
another offset. A student writes it because "the offset identifies the message" is what
a single-partition example suggests.
"""

# Calibrated: caught with no fault at all (the graded orders topic has several
# partitions, so two orders share an offset).
EXPECTED_FAILURE = "none x no_missing_rows"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS done_offsets (off INTEGER PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    _topic, _partition, offset = where
    with db:
        if db.execute("INSERT OR IGNORE INTO done_offsets (off) VALUES (?)",
                      (offset,)).rowcount == 0:
            return
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
