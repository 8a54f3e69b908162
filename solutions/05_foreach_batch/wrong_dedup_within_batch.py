"""Known-wrong: drops duplicate records *within* the batch (``dropDuplicates`` on the
provenance key) before inserting. A replay is another call with the same batch: nothing
in it is a duplicate of itself, so its rows go in twice. Fails exactly_once under
crash_query."""

EXPECTED_FAILURE = "crash_query x exactly_once"


def write_batch(df, batch_id, db):
    rows = (df.dropDuplicates(["provenance"]).select("provenance", "partition", "value")
            .collect())
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r["provenance"], r["partition"], r["value"]) for r in rows])
