"""Correct, written differently from the reference: no Python branch decides whether the
row is written. The order is inserted by ``INSERT ... SELECT ... WHERE changes() = 1``:
SQLite's ``changes()`` is the number of rows the previous statement (the claim's
``INSERT OR IGNORE``) inserted, so the row goes in only when the claim was new, inside the
same ``with db:`` transaction.

The claim's key is the message id, the same for every copy of the message.
"""


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS order_messages (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where):
    with db:
        db.execute("INSERT OR IGNORE INTO order_messages (message_id) VALUES (?)",
                   (message_id,))
        db.execute("INSERT INTO orders (order_id, amount) SELECT ?, ? WHERE changes() = 1",
                   (order["order_id"], order["amount"]))
