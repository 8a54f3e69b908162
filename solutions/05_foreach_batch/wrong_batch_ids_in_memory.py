"""Known-wrong: remembers the batch ids it wrote in a Python set. A query restarted in
the same driver still has it (crash_query passes); a driver SIGKILLed and started
again does not, and writes the batch again. Fails exactly_once under kill_driver."""

EXPECTED_FAILURE = "kill_driver x exactly_once"

DONE = set()


def write_batch(df, batch_id, db):
    if batch_id in DONE:
        return
    rows = df.select("provenance", "partition", "value").collect()
    with db:
        db.executemany("INSERT INTO records (provenance, partition, value) VALUES (?, ?, ?)",
                       [(r["provenance"], r["partition"], r["value"]) for r in rows])
    DONE.add(batch_id)
