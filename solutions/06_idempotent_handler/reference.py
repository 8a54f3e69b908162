"""Reference solution of exercise 06: the idempotent consumer. A processed-messages
table keyed by the message id, written in the same database transaction as the row:
both commit, or neither. The payment cannot join that transaction, so it carries an
idempotency key that names the message: a crash after the service answered and before
the commit makes the next delivery call again, and the service knows the key. Kept out
of labs/ on purpose."""


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    with db:
        seen = db.execute("INSERT OR IGNORE INTO processed (message_id) VALUES (?)",
                          (message_id,)).rowcount == 0
        if not seen:
            payments.pay(order, key=message_id)
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
