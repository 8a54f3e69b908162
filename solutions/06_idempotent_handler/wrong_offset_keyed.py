"""Known-wrong: remembers the message's *offset* (in the same transaction as the row).
Right for a redelivery, wrong for a copy the producer wrote twice (two offsets, one
message): fails one_row_each under lose_ack."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "lose_ack x one_row_each"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS processed (topic TEXT, part INTEGER, "
               "off INTEGER, PRIMARY KEY (topic, part, off))")


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    with db:
        seen = db.execute("INSERT OR IGNORE INTO processed VALUES (?, ?, ?)",
                          where).rowcount == 0
        if not seen:
            db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                       (order["order_id"], order["amount"]))
