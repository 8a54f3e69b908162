"""Wrong: the payment's idempotency key is the message's position, topic/partition/offset.

The student pays first, on every delivery, trusting the key to make a repeat a no-op, and
keys it by where the message sits: a redelivery after a crash is at the same offset, so
it sends the same key, and the row is deduplicated correctly by the message id. But a
producer that lost an ack wrote the order twice, at two offsets: one payment, two keys,
and the service applies it twice.
"""

EXPECTED_FAILURE = "lose_ack x one_effect_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    topic, partition, offset = where
    payments.pay(order, key=f"{topic}-{partition}-{offset}")
    with db:
        if db.execute("INSERT OR IGNORE INTO processed (message_id) VALUES (?)",
                      (message_id,)).rowcount == 1:
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
