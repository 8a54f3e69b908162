"""Wrong: the payment is made with no idempotency key.

The student made the row idempotent (a processed-messages table keyed by the message id,
in the row's transaction) and took the payment to be covered by it: the call sits inside
the same ``with db:``, after the claim. But the service is not in that transaction. Killed
after the service answered and before the commit, the handler's claim rolls back, the next
instance handles the message again, and calls again; with no key, the service takes the
second call for a second payment.
"""

EXPECTED_FAILURE = "kill_after_http x one_effect_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    with db:
        if db.execute("INSERT OR IGNORE INTO processed (message_id) VALUES (?)",
                      (message_id,)).rowcount == 1:
            payments.pay(order)
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
