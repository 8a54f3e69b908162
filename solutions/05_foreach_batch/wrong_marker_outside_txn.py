"""Known-wrong: remembers the batch id in the database, but commits the rows first and
the batch id in a second transaction. The driver SIGKILLed between the two commits
leaves rows without their batch id: the replay writes them again. Fails exactly_once
under kill_driver (crash_query comes after both commits and passes)."""

EXPECTED_FAILURE = "kill_driver x exactly_once"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS batches (batch_id INTEGER PRIMARY KEY)")


def write_batch(df, batch_id, db):
    if db.execute("SELECT 1 FROM batches WHERE batch_id = ?", (batch_id,)).fetchone():
        return
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r["provenance"], r["partition"], r["value"]) for r in rows])
    with db:
        db.execute("INSERT INTO batches (batch_id) VALUES (?)", (batch_id,))
