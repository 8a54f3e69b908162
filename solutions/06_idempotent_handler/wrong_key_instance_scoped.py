"""Wrong: the dedup key is scoped to the service instance: (process id, message id).

"Each instance keeps its own processed set, so instances never contend on the same
rows" sounds like good design, and within one instance it works (a producer's duplicate
handled by the same process is caught). But the redelivery that matters comes *after*
an instance died, to another instance, whose keys carry another pid: it writes the row
again.
"""

import os

EXPECTED_FAILURE = "kill_after_db x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed_by (instance INTEGER, message_id TEXT, "
               "PRIMARY KEY (instance, message_id))")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    with db:
        new = db.execute("INSERT OR IGNORE INTO processed_by (instance, message_id) "
                         "VALUES (?, ?)", (os.getpid(), message_id)).rowcount == 1
        if new:
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
