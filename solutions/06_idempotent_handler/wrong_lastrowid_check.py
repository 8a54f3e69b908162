"""Wrong: tells a new message from a repeat by the cursor's ``lastrowid`` after
``INSERT OR IGNORE``, instead of its ``rowcount``.

The table, the key and the single transaction are all right. But when ``INSERT OR
IGNORE`` ignores the row, sqlite3's ``lastrowid`` is not 0 or None: it keeps the rowid of
the connection's last successful insert, so the check is truthy for a repeat too and the
order is written again. A student writes it because ``lastrowid`` is what one reads
after an insert elsewhere, and the first message of a fresh process passes the check.
"""

EXPECTED_FAILURE = "lose_ack x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS inbox (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    with db:
        cur = db.execute("INSERT OR IGNORE INTO inbox (message_id) VALUES (?)", (message_id,))
        if cur.lastrowid:  # the bug: truthy for an ignored insert too
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
