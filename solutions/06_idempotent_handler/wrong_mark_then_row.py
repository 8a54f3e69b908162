"""Known-wrong: marks the message processed and commits, then writes the row in a
second transaction. A crash between the two commits leaves a message marked done whose
row never came: fails no_missing_rows under kill_after_db."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "kill_after_db x no_missing_rows"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    if db.execute("SELECT 1 FROM processed WHERE message_id = ?", (message_id,)).fetchone():
        return
    with db:
        db.execute("INSERT INTO processed (message_id) VALUES (?)", (message_id,))
    with db:
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
