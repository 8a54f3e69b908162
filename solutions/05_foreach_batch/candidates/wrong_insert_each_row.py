"""Wrong: a plain insert of every row, one ``execute`` per row, nothing remembered.

It writes what the batch holds, row by row, in one transaction: tidy, and exactly what
``foreachBatch`` examples show. Nothing tells a replayed batch from a new one, so every
replay adds the batch's rows again. A student writes it believing Spark's checkpoint
already makes the query exactly once.
"""

EXPECTED_FAILURE = "crash_query x exactly_once"


def write_batch(df, batch_id, db):
    with db:
        for r in df.select("provenance", "partition", "value").toLocalIterator():
            db.execute("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       (r["provenance"], r["partition"], r["value"]))
