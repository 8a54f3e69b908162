"""Wrong: the payment's idempotency key is a fresh uuid, made per call.

The student read "send an Idempotency-Key with every request" and made one as payment
APIs' examples do, ``uuid.uuid4()``, right before the call. The row is deduplicated
correctly (message id, same transaction). But a key made per attempt names the attempt,
not the payment: after a kill between the service's answer and the commit, the retry
sends a new key, and the service applies the payment a second time.
"""

import uuid

EXPECTED_FAILURE = "kill_after_http x one_effect_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    with db:
        seen = db.execute("INSERT OR IGNORE INTO processed (message_id) VALUES (?)",
                          (message_id,)).rowcount == 0
        if not seen:
            payments.pay(order, key=str(uuid.uuid4()))
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
