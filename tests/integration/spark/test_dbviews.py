"""Spark reads chapter 06's database over JDBC from a PostgreSQL server the lab starts,
and counts the duplicates the checker counts.

Chapter 06 runs on SQLite in the chapter tests; this is its PostgreSQL path: the
server, the services' rows in it, Spark's JDBC source (the PostgreSQL driver jar) and
the per-message view the chapter shows, under one fault that duplicates a row and a
call (a kill after the HTTP call). The chapter's own comparison is asserted:
Spark's extra rows and effects, per pattern, equal the checker's duplicates. (It
replaces a second run of the whole chapter on PostgreSQL: the same path, a fifth of
the machine's time.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deliverylab.chapters.side_effects.runs import per_message, run_fault, table
from deliverylab.cluster import Cluster
from deliverylab.history import History
from deliverylab.nemesis import Nemesis
from deliverylab.services.fleet import SideEffects
from deliverylab.spark.inspector import Inspector

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster.start(brokers=1, proxy=True) as c:
        yield c


def test_spark_counts_the_checkers_duplicates_in_postgres(cluster: Cluster):
    history = History()
    lab = SideEffects(cluster, "postgres")
    try:
        assert lab.db.kind == "postgres"
        run = run_fault(lab, "kill_after_http", orders=12, nemesis=Nemesis(cluster, history),
                        history=history, timeout=120)
        print(run.summary())
        inspector = Inspector(cluster)
        try:
            in_table = table(inspector, lab.db, "orders_rows").count()
            spark, rows = {}, {}
            for pattern, fleet in run.fleets.items():
                f = per_message(inspector, lab, fleet, history).toPandas()
                spark[pattern] = int((f["rows"] - 1).clip(lower=0).sum()
                                     + (f["effects"] - 1).clip(lower=0).sum())
                rows[pattern] = int(f["rows"].sum())
        finally:
            Inspector.stop()
    finally:
        lab.stop()
    checker = {p: e.duplicates for p, e in run.effects.items()}
    assert spark == checker, (spark, checker)
    assert checker["none"] >= 1, run.summary()  # the fault duplicated, and both saw it
    assert checker["idempotent"] == checker["outbox"] == 0, checker
    assert rows == {p: e.rows for p, e in run.effects.items()}, (rows, run.summary())
    assert in_table >= sum(rows.values()) > 0, (in_table, rows)
    assert lab.pids == [], "stop() left processes running"
