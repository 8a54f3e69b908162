"""Wrong: records the batch id in its own transaction, then writes the rows in another.

"Mark it first, so a replay can never write twice" is a tempting order, and it does
prevent duplicates. But the two commits are separate: a driver killed after the mark
committed and before the rows did leaves a batch marked done with no rows, and the
replay skips it. The batch is lost for good.
"""

EXPECTED_FAILURE = "kill_driver x nothing_lost"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS done_batches (id INTEGER PRIMARY KEY)")


def write_batch(df, batch_id, db):
    with db:
        marked = db.execute("INSERT OR IGNORE INTO done_batches (id) VALUES (?)",
                            (batch_id,)).rowcount
    if not marked:
        return
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r.provenance, r.partition, r.value) for r in rows])
