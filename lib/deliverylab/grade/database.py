"""The student's database in the child: a ``sqlite3`` connection whose commits are seen
however they are made.

Why a module of its own: a crash "between your database write and your offset commit"
is placed by counting database commits, and a student commits in more ways than a
wrapper's ``commit()`` sees (an 06 handler's ``BEGIN IMMEDIATE`` ... ``COMMIT`` was once
failed for a kill that never fired); the statement trace that finds them all is this
module's one job.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .events import Events, KillPlan
from .search import db_commit
from .stall import Stall

#: Attributes a student may set on their database: they belong to the connection.
CONNECTION_SETTINGS = frozenset({"isolation_level", "row_factory", "text_factory",
                                 "autocommit"})


class StudentDatabase:
    """The handler's database: a ``sqlite3`` connection whose commits are seen however
    they are made (``with db:``, ``db.commit()``, an SQL ``COMMIT``/``END``, an
    autocommit write: :func:`~deliverylab.grade.search.db_commit` over sqlite3's trace
    of the statements), recorded as ``db_write`` of the message being handled, and
    counted for the crash plan (``db_commit``)."""

    def __init__(self, conn: sqlite3.Connection, events: Events,
                 plan: KillPlan | None = None, stall: Stall | None = None) -> None:
        self._conn, self._events, self.plan, self.stall = conn, events, plan, stall
        self.commits = 0
        self.message: str | None = None
        #: The messages handed to the handler so far (the one handled now included).
        self.count = 0
        self.armed = False
        self._statements: list[str] = []
        self._changes = conn.total_changes
        conn.set_trace_callback(self._statements.append)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in CONNECTION_SETTINGS:  # db.isolation_level = None: the connection's
            setattr(self._conn, name, value)
        else:
            super().__setattr__(name, value)

    def look(self) -> None:
        """After each call into the database: did it just commit?"""
        statements, self._statements[:] = list(self._statements), []
        done, self._changes = db_commit(statements, self._conn.in_transaction,
                                        self._conn.total_changes, self._changes)
        if done:
            self._committed()

    def _committed(self) -> None:
        if not self.armed:
            return
        self.commits += 1
        self._events.write("db_write", outcome="ok", values=[self.message] if self.message
                           else [], detail=f"database commit #{self.commits}")
        if self.plan is not None:
            self.plan.after("db_commit")

    def before(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Before each statement: is it the write the overlap fault stalls at?"""
        if self.stall is not None and self.armed:  # the SQL: positional, or by keyword
            self.stall.before(self.count, self.message, args[0] if args else next(
                (kwargs[k] for k in ("sql", "sql_script") if k in kwargs), ""))

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("execute"):
            self.before(args, kwargs)
        try:
            return getattr(self._conn, name)(*args, **kwargs)
        finally:
            self.look()

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        return _Cursor(self._call("execute", *args, **kwargs), self)

    def executemany(self, *args: Any, **kwargs: Any) -> Any:
        return _Cursor(self._call("executemany", *args, **kwargs), self)

    def executescript(self, *args: Any, **kwargs: Any) -> Any:
        return _Cursor(self._call("executescript", *args, **kwargs), self)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        return _Cursor(self._conn.cursor(*args, **kwargs), self)

    def commit(self) -> None:
        self._call("commit")

    def rollback(self) -> None:
        self._call("rollback")

    def __enter__(self) -> StudentDatabase:
        self._conn.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self._conn.__exit__(*exc)
        finally:
            self.look()


class _Cursor:
    """A cursor whose statements the database looks at too (a ``COMMIT`` run through
    ``db.cursor().execute`` is a commit like any other)."""

    def __init__(self, cursor: sqlite3.Cursor, db: StudentDatabase) -> None:
        self._cur, self._db = cursor, db

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)

    def __iter__(self) -> Any:
        return iter(self._cur)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> _Cursor:
        self._db.before(args, kwargs)
        try:
            getattr(self._cur, name)(*args, **kwargs)
        finally:
            self._db.look()
        return self

    def execute(self, *args: Any, **kwargs: Any) -> _Cursor:
        return self._call("execute", *args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> _Cursor:
        return self._call("executemany", *args, **kwargs)

    def executescript(self, *args: Any, **kwargs: Any) -> _Cursor:
        return self._call("executescript", *args, **kwargs)
