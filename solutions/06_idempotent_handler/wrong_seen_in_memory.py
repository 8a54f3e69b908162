"""Wrong: remembers handled message ids in a module-level set.

It catches the producer's duplicate when one process handles both copies, and it is
fast. But the redelivery after a crash goes to a new process with an empty set: the
row is written again. A student writes it because "dedup with a set" is the first idea,
and a cache feels like the service's memory.
"""

EXPECTED_FAILURE = "kill_after_db x one_row_each"

_handled: set[str] = set()


def handle(db, message_id, order, where, payments):
    payments.pay(order, key=message_id)  # the payment is keyed right; the row is not
    if message_id in _handled:
        return
    with db:
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
    _handled.add(message_id)
