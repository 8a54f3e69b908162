"""Known-wrong: writes the row and commits, then marks the message processed in a second
transaction. A crash between the two commits redelivers a message whose row exists but
whose mark does not: fails one_row_each under kill_after_db."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "kill_after_db x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    if db.execute("SELECT 1 FROM processed WHERE message_id = ?", (message_id,)).fetchone():
        return
    with db:
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
    with db:
        db.execute("INSERT INTO processed (message_id) VALUES (?)", (message_id,))
