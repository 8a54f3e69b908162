"""Correct, written differently from the reference: the dedup key is the SHA-256 of the
message id (a fixed-width key, as one would store for ids of unknown length or content),
claimed with ``INSERT ... ON CONFLICT DO NOTHING``, and the transaction is ended with
explicit ``db.commit()`` / ``db.rollback()`` calls instead of ``with db:``.

The hash is a pure function of the message id, so the key is the same for a redelivered
copy, a producer's duplicate, any process and any restart. The claim and the row commit
in one transaction; a claim that changed nothing means the message was handled. The
same digest is the payment's idempotency key, sent only for a new claim.
"""

import hashlib


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS message_claims (digest TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    digest = hashlib.sha256(str(message_id).encode()).hexdigest()
    if not db.in_transaction:  # explicit, so it is one transaction in any isolation mode
        db.execute("BEGIN")
    try:
        claimed = db.execute("INSERT INTO message_claims (digest) VALUES (?) "
                             "ON CONFLICT (digest) DO NOTHING", (digest,)).rowcount == 1
        if claimed:
            payments.pay(order, key=digest)  # the same digest names the payment
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
        db.commit()
    except BaseException:
        db.rollback()
        raise
