"""Correct, written differently from the reference: the transaction is opened and ended
with SQL statements, ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any error),
not ``with db:``, and the check is a SELECT.

``BEGIN IMMEDIATE`` takes SQLite's write lock before the check, so a second instance
handling the same message at the same moment waits at its own ``BEGIN IMMEDIATE`` and
then sees the first one's mark: check and write are one atomic step, and the mark and the
row commit together or not at all. The primary key on the mark is a second line of
defence. The payment is made inside the lock, keyed by a string built from the message id
(not the id itself): a retry after a crash builds the same key.
"""


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS handled_messages (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    if db.in_transaction:  # a transaction left open by someone else: not ours to commit
        db.execute("ROLLBACK")
    db.execute("BEGIN IMMEDIATE")
    try:
        done = db.execute("SELECT 1 FROM handled_messages WHERE message_id = ?",
                          (message_id,)).fetchone()
        if done is None:  # the call inside the lock: a retry after a crash repeats its key
            payments.pay(order, key=f"order-payment/{message_id}")
            db.execute("INSERT INTO handled_messages (message_id) VALUES (?)", (message_id,))
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
