"""Known-wrong: inserts the batch's rows and remembers nothing. Spark's replay of the
crashed batch inserts them again: fails exactly_once under crash_query (and
kill_driver)."""

#: The cell of the grade that must catch this solution (the calibration test reads it).
EXPECTED_FAILURE = "crash_query x exactly_once"


def write_batch(df, batch_id, db):
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r["provenance"], r["partition"], r["value"]) for r in rows])
