"""Chapter 5 exercise: the ``foreachBatch`` function of the pipeline's database sink.

The lab's Spark query reads the input topic (read_committed, 10 offsets per
micro-batch) and hands each micro-batch to your ``write_batch``, which writes one row
per record into a real (SQLite) database. The query runs in a Spark driver process of
its own, and the lab breaks it, each time after your function wrote batch N and before
Spark wrote ``commits/N``:

- ``crash_query``: an exception in the driver, once your function returned; the query
  restarts *in the same driver* (your module's variables survive);
- ``kill_driver``: SIGKILL of the whole driver (Python and its Spark JVM) right after
  your first database commit of the batch; a new driver restarts the query.

Either way Spark runs batch N again, with the same ``batch_id`` and the same records.
Then the lab counts the rows: **every input record has its row** and **no record has
two**, and the query must reach the end of its input. Grade it from the chapter
(``dl.grade("05")``) or a terminal::

    python -m deliverylab.grade 05 labs/exercises/05_foreach_batch.py

The contract:

- ``setup(db)`` (optional) runs once per driver before the query starts: create the
  tables you need (``CREATE TABLE IF NOT EXISTS ...``).
- ``write_batch(df, batch_id, db)`` is the function Spark's ``foreachBatch`` calls, once
  per micro-batch: ``df`` is the batch as a Spark DataFrame with the columns
  ``provenance`` (``topic-partition-offset`` of the input record: the same in every
  replay), ``topic``, ``partition``, ``offset``, ``value``; ``batch_id`` is Spark's batch
  number (the same in every replay of that batch); ``db`` is a ``sqlite3`` connection
  (``db.execute(...)``; ``with db:`` is one transaction, committed at its end).
- The side effect: ``INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)``
  for each record. Leave the ``records`` table as it is (no constraint on it):
  remembering is your function's job.

This starter writes the rows, and it fails the grade: find out where.
"""


def setup(db):
    """Create your own tables here, if you need any."""


def write_batch(df, batch_id, db):
    """Write one row per record of the batch: once, however often Spark runs it."""
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r["provenance"], r["partition"], r["value"]) for r in rows])
