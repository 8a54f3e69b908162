"""Wrong: writes the row first, then records the message id, and deletes the row again if
the id was already there: the dedup comes after the side effect, in other transactions.

The student writes the order "so it is never lost", then marks the message and undoes
the row if the mark shows a repeat. Each step commits on its own. A kill right after the
row's commit leaves a row and no mark; the redelivered copy writes a second row, finds no
mark, marks it, and keeps both. (Against a real side effect, a payment, the undo would
not even exist.)
"""

EXPECTED_FAILURE = "kill_after_db x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS marks (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    with db:
        rowid = db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                           (order["order_id"], order["amount"])).lastrowid
    with db:
        repeat = db.execute("INSERT OR IGNORE INTO marks (message_id) VALUES (?)",
                            (message_id,)).rowcount == 0
    if repeat:
        with db:
            db.execute("DELETE FROM orders WHERE rowid = ?", (rowid,))
