"""Chapter 6 exercise: the idempotent consumer's handler, for a database row and a
payment at an HTTP service.

The lab's service consumes orders and, for each message, calls your ``handle``. Your
handler has two side effects per order: one row in the ``orders`` table of a real
(SQLite) database, and one payment at the lab's payment service (a real HTTP service in a
process of its own, which logs every request). The lab commits the batch's offsets
*after* your handler returned for every message of the batch, so a message can reach
your handler twice:

- ``kill_after_db``: the lab SIGKILLs the service right after one of your database
  commits, before its offset commit; a new instance gets the batch again;
- ``kill_after_http``: the same, right after the payment service answered one of your
  calls;
- ``lose_ack``: the producer upstream lost an ack and wrote an order twice (the same
  message id, at two offsets);
- ``stall_consumer``: the service stalls inside your handler, before its first database
  write of a message; the group hands its partitions to a new instance, which handles
  the same messages; then the stalled one wakes up and carries on.

Then it counts the rows and reads the payment service's log: **one row per message**,
**no message without its row**, **no order paid twice**, **every order paid**, and the
service must finish. Grade it from the chapter (``dl.grade("06")``) or a terminal::

    python -m deliverylab.grade 06 labs/exercises/06_idempotent_handler.py

The contract:

- ``setup(db)`` (optional) runs once per service process before the first message:
  create the tables you need (``CREATE TABLE IF NOT EXISTS ...``).
- ``handle(db, message_id, order, where, payments)`` runs once per delivered message:
  ``db`` is a ``sqlite3`` connection (Python's DB-API: ``db.execute(...)``,
  ``with db:`` is one transaction, committed at its end); ``message_id`` identifies the
  message (the same for a redelivered copy and for a copy the producer wrote twice);
  ``order`` is ``{"order_id": ..., "amount": ...}``; ``where`` is the message's
  ``(topic, partition, offset)``; ``payments`` is a client of the payment service.
- ``payments.pay(order, key=None)`` pays the order at the service and returns its
  answer (``{"payment": n, "replayed": ...}``). ``key``, a string, is sent as the
  request's ``Idempotency-Key`` header: the service applies one payment per key, and
  answers a repeat of a key it knows with the first answer (``replayed``) and no new
  payment. With no key, every call is a payment. The service is not in your database's
  transaction: once it answered, the payment is made, whatever your handler does next.
- The row: ``INSERT INTO orders (order_id, amount) VALUES (?, ?)``. Leave the
  ``orders`` table as it is (no constraint on it): remembering is your handler's job.

This starter writes the row and pays, and it fails the grade: find out where.
"""


def setup(db):
    """Create your own tables here, if you need any."""


def handle(db, message_id, order, where, payments):
    """Write the order's row and pay it: once per message, however often it is
    delivered."""
    payments.pay(order)
    with db:
        db.execute("INSERT INTO orders (order_id, amount) VALUES (?, ?)",
                   (order["order_id"], order["amount"]))
