"""The database layer on SQLite (embedded: no server) and its URL checks."""

from __future__ import annotations

import pytest

from deliverylab.errors import BadValue
from deliverylab.services.db import Database


def test_urls_are_checked_in_one_line():
    for bad in ("mysql://x", "orders.db", "sqlite://", 3):
        with pytest.raises(BadValue, match="sqlite:///"):
            Database(bad)
    pg = Database("postgresql://lab@127.0.0.1:5433/postgres")
    assert pg.kind == "postgres" and pg.sql("a = ? AND b = ?") == "a = %s AND b = %s"
    assert pg.jdbc_url == "jdbc:postgresql://127.0.0.1:5433/postgres"
    assert pg.jdbc_options["user"] == "lab"


def test_processed_table_takes_one_mark_per_message(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'o.db'}")
    db.create_schema()
    assert db.jdbc_url == f"jdbc:sqlite:{tmp_path / 'o.db'}"
    conn = db.connect()
    insert = "INSERT INTO processed (run, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
    with db.transaction(conn):
        assert db.execute(conn, insert, ("r", "o:1")).rowcount == 1
    with db.transaction(conn):
        assert db.execute(conn, insert, ("r", "o:1")).rowcount == 0  # already processed
        assert db.execute(conn, insert, ("other", "o:1")).rowcount == 1  # runs apart


def test_a_rolled_back_transaction_leaves_no_row_and_no_mark(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'o.db'}")
    db.create_schema()
    conn = db.connect()
    with pytest.raises(RuntimeError), db.transaction(conn):
        db.execute(conn, "INSERT INTO processed (run, message_id) VALUES (?, ?)", ("r", "o:2"))
        db.execute(conn, "INSERT INTO orders_rows VALUES (?, ?, ?, ?, ?, ?)",
                   ("r", "o:2", "i0", 0, 7, 0.0))
        raise RuntimeError("the instance died before COMMIT")
    assert db.query("SELECT COUNT(*) FROM processed") == [(0,)]
    assert db.rows("r") == []
