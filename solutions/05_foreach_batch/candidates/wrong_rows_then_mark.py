"""Wrong: writes the rows in one transaction, then records the batch id in a second one.

The order is the at-least-once one (work first, then remember it), and the replay check
is right; but a driver killed between the two commits leaves the rows written and the
batch unmarked, so the replay writes every row of the batch again. A student writes it
because both steps "are each in a transaction" and it looks careful.
"""

EXPECTED_FAILURE = "kill_driver x exactly_once"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS written (batch INTEGER PRIMARY KEY)")


def write_batch(df, batch_id, db):
    if db.execute("SELECT 1 FROM written WHERE batch = ?", (batch_id,)).fetchone():
        return
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r.provenance, r.partition, r.value) for r in rows])
    with db:
        db.execute("INSERT INTO written (batch) VALUES (?)", (batch_id,))
