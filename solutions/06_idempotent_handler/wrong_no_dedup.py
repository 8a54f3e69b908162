"""Known-wrong: writes the row for every delivery (the starter's loop, unchanged): a
redelivered batch writes its rows again: fails one_row_each under kill_after_db."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "kill_after_db x one_row_each"


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    with db:
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
