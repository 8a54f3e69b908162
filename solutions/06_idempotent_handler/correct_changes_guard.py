"""Correct, written differently from the reference: no Python branch decides whether the
row is written. The order is inserted by ``INSERT ... SELECT ... WHERE changes() = 1``:
SQLite's ``changes()`` is the number of rows the previous statement (the claim's
``INSERT OR IGNORE``) inserted, so the row goes in only when the claim was new, inside the
same ``with db:`` transaction.

The claim's key is the message id, the same for every copy of the message. The payment
is made first, on every delivery, with the message id as its idempotency key: the service,
not the database, makes a repeat a no-op.
"""


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS order_messages (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    # Paid on every delivery, first: the service's idempotency key makes a repeat a no-op.
    payments.pay(order, key=message_id)
    with db:
        db.execute("INSERT OR IGNORE INTO order_messages (message_id) VALUES (?)",
                   (message_id,))
        db.execute("INSERT INTO orders (order_id, amount) SELECT ?, ? WHERE changes() = 1",
                   (order["order_id"], order["amount"]))
