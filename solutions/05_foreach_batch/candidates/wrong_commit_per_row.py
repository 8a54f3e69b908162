"""Wrong: one transaction per row, and the batch id recorded after the last row.

The batch id check is right, but each row commits on its own (``with db:`` inside the
loop, "so a failure loses only one row"), and the id goes in a transaction of its own
at the end. A driver killed after the first row's commit leaves part of the batch
written and no id: the replay writes those rows again. A student writes it because
small transactions are a common tuning habit.
"""

EXPECTED_FAILURE = "kill_driver x exactly_once"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS batch_log (batch_id INTEGER PRIMARY KEY)")


def write_batch(df, batch_id, db):
    if db.execute("SELECT 1 FROM batch_log WHERE batch_id = ?", (batch_id,)).fetchone():
        return
    for r in df.select("provenance", "partition", "value").collect():
        with db:
            db.execute("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       (r.provenance, r.partition, r.value))
    with db:
        db.execute("INSERT INTO batch_log (batch_id) VALUES (?)", (batch_id,))
