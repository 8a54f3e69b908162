"""Wrong: the idempotency key is made per attempt: the message id plus a fresh uuid.

The student read "send an idempotency key with every request" and generates one, as
payment APIs' examples do with ``uuid4()``, in the same transaction as the row. But a
key that differs on every attempt identifies the attempt, not the message: a redelivery
or a producer's duplicate gets a new key, finds nothing, and writes a second row.
"""

import uuid

EXPECTED_FAILURE = "kill_after_db x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS idempotency_keys (key TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    key = f"{message_id}:{uuid.uuid4()}"
    with db:
        if db.execute("INSERT OR IGNORE INTO idempotency_keys (key) VALUES (?)",
                      (key,)).rowcount == 0:
            return
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
