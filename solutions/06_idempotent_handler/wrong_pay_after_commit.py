"""Wrong: the payment is made after the commit, and only for a message the claim says is
new.

The student kept the call out of the transaction (it cannot join it) and made it once per
message: after the claim and the row committed, and only if the claim was new -- the key
is the message id. But a crash between the commit and the call leaves the claim
committed and no payment; the next delivery finds the claim, skips the call, and the
order is never paid.
"""

EXPECTED_FAILURE = "kill_after_db x no_missing_effects"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    with db:
        new = db.execute("INSERT OR IGNORE INTO processed (message_id) VALUES (?)",
                         (message_id,)).rowcount == 1
        if new:
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
    if new:
        payments.pay(order, key=message_id)
