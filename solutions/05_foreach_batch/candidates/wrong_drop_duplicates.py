"""Wrong: deduplicates the batch with ``df.dropDuplicates(["provenance"])`` and inserts.

``dropDuplicates`` on a micro-batch DataFrame removes copies *inside that batch*; a
replay of batch N is a new call with a new DataFrame that has no copies in it, and all
its rows are inserted a second time. A student writes it because the notebook's last
section deduplicates by provenance with Spark, and it looks like the same fix.
"""

EXPECTED_FAILURE = "crash_query x exactly_once"


def write_batch(df, batch_id, db):
    rows = df.dropDuplicates(["provenance"]).select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r.provenance, r.partition, r.value) for r in rows])
