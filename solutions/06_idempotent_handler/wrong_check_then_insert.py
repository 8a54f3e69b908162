"""Wrong: checks the processed-messages table first, then writes the row and the mark in
a transaction of its own, with no constraint on the table.

One instance at a time, this is right: the mark commits with the row, and a redelivered
or duplicated message finds it. Two instances at once (a stalled one that resumes after
the group gave its partition to a successor) both check, both find nothing, and both
write: two rows. Nothing stops the second mark either, since the table has no key. A
student writes it because "look before you write" is how one prevents duplicates by
hand, and a unique constraint looks redundant after the check.
"""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "stall_consumer x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS handled (message_id TEXT)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    if db.execute("SELECT 1 FROM handled WHERE message_id = ?", (message_id,)).fetchone():
        return
    with db:
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
        db.execute("INSERT INTO handled (message_id) VALUES (?)", (message_id,))
