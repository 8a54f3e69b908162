"""Wrong: the check is written inside ``with db:``, but Python's sqlite3 does not begin
the transaction until the first INSERT, so the SELECT still runs outside it.

The student did move the check "into the transaction" and believes it is atomic. With
the module's default (legacy) transaction control, ``with db:`` opens nothing by itself:
the implicit ``BEGIN`` comes before the first data-changing statement, after the check.
Two overlapping instances both read "not handled", then both insert; with no unique key
on the table both succeed: two rows. ``BEGIN IMMEDIATE`` or a primary key would stop it.
"""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "stall_consumer x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS seen_messages (message_id TEXT NOT NULL)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    with db:
        seen = db.execute("SELECT count(*) FROM seen_messages WHERE message_id = ?",
                          (message_id,)).fetchone()[0]
        if seen:
            return
        db.execute("INSERT INTO seen_messages (message_id) VALUES (?)", (message_id,))
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
