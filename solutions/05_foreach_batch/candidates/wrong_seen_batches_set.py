"""Wrong: remembers the batch ids it wrote in a module-level Python set.

It survives an exception in the driver (the query restarts in the same process and the
set is still there), so a ``crash_query`` test passes. A SIGKILL of the driver loses the
set with the process; the new driver replays the last batch and writes it again. A
student writes it because Spark's docs say "use the batch id to deduplicate" and a set
is the obvious place for ids.
"""

EXPECTED_FAILURE = "kill_driver x exactly_once"

_written: set[int] = set()


def write_batch(df, batch_id, db):
    if batch_id in _written:
        return
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r.provenance, r.partition, r.value) for r in rows])
    _written.add(batch_id)
