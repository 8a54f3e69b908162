"""Correct, written differently from the reference: instead of a table of every batch id,
one row holds the highest batch id written, updated in the same transaction as the rows;
a batch whose id is not above it is a replay and writes nothing. The transaction is
opened with SQL ``BEGIN`` and ended with ``db.commit()`` / ``db.rollback()``, not
``with db:``.

This relies on what Spark guarantees: batch ids grow by one, and a restart replays only
the last batch not in ``commits/`` (with the same id). It also assumes the database and
the checkpoint live and die together (a new checkpoint would start again at batch 0).
"""


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS sink_progress "
               "(one INTEGER PRIMARY KEY CHECK (one = 1), last_batch INTEGER NOT NULL)")


def write_batch(df, batch_id, db):
    rows = [(r.provenance, r.partition, r.value)
            for r in df.select("provenance", "partition", "value").collect()]
    if db.in_transaction:  # nothing of ours should be pending; start from a clean slate
        db.rollback()
    db.execute("BEGIN")
    try:
        last = db.execute("SELECT last_batch FROM sink_progress WHERE one = 1").fetchone()
        if last is not None and batch_id <= last[0]:
            db.rollback()
            return
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       rows)
        db.execute("INSERT INTO sink_progress (one, last_batch) VALUES (1, ?) "
                   "ON CONFLICT (one) DO UPDATE SET last_batch = excluded.last_batch",
                   (batch_id,))
        db.commit()
    except BaseException:
        db.rollback()
        raise
