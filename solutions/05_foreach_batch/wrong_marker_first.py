"""Known-wrong: commits the batch id first, then the rows, in two transactions. The
driver SIGKILLed between the two commits leaves a batch marked done with no rows: the
replay skips it and its records are never written. Fails nothing_lost under
kill_driver."""

EXPECTED_FAILURE = "kill_driver x nothing_lost"


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS batches (batch_id INTEGER PRIMARY KEY)")


def write_batch(df, batch_id, db):
    if db.execute("SELECT 1 FROM batches WHERE batch_id = ?", (batch_id,)).fetchone():
        return
    with db:
        db.execute("INSERT INTO batches (batch_id) VALUES (?)", (batch_id,))
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r["provenance"], r["partition"], r["value"]) for r in rows])
