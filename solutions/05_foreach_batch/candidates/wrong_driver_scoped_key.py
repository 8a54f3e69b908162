"""Wrong: the dedup key is (a run id made when the module loads, batch id).

The student read that one database may serve several queries and that the key should
hold a query id as well as the batch id, and made the "query id" ``uuid4()`` at import.
Rows and key commit in one transaction, so a replay in the same driver is skipped; but
a new driver (after a SIGKILL) has a new run id, does not find its key, and writes the
batch again. The key is not stable across restarts: Spark's query id lives in the
checkpoint, a uuid made by the process does not.
"""

import uuid

EXPECTED_FAILURE = "kill_driver x exactly_once"

_RUN = uuid.uuid4().hex


def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS sink_batches "
               "(run TEXT, batch_id INTEGER, PRIMARY KEY (run, batch_id))")


def write_batch(df, batch_id, db):
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        if db.execute("INSERT OR IGNORE INTO sink_batches (run, batch_id) VALUES (?, ?)",
                      (_RUN, batch_id)).rowcount == 0:
            return
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r.provenance, r.partition, r.value) for r in rows])
