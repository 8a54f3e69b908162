"""Correct, written differently from the reference: the database first, the payment
after the commit, on every delivery.

The student reasoned from the crash's side: the row and its claim commit together (a
claim table keyed by the message id, ``with db:``), and only then is the service called
-- whether the claim was new or not. A crash after the commit and before the call leaves
an order with its row and no payment; the next delivery finds the claim, and calls
anyway. The key is built from the message id (``order:<id>``), so every copy of the
message and every retry sends the same key, and the service applies the payment once.
"""


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS order_claims (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    with db:
        claim = db.execute("INSERT INTO order_claims (message_id) VALUES (?) "
                           "ON CONFLICT DO NOTHING", (message_id,))
        if claim.rowcount == 1:
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
    payments.pay(order, key=f"order:{message_id}")
