"""The database of chapter 06: SQLite (embedded, the default) or a real PostgreSQL.

A :class:`Database` is a URL (``sqlite:///path/orders.db`` or
``postgresql://user@host:port/db``) plus the few statements the service instances run,
written once with ``?`` placeholders. Every instance opens its own connection in its
own process and runs its transactions explicitly (``BEGIN`` ... ``COMMIT``): the lesson
is precisely what one database transaction does and does not cover.

:class:`PostgresServer` starts PostgreSQL from the system's binaries (``initdb``,
``postgres``) as a local process on 127.0.0.1 with a private data directory, reaped
with its owner like the brokers. PostgreSQL refuses to run as root; when the lab runs
as root (CI containers do) the server runs as an unprivileged system user
(``postgres``, else ``nobody``) through ``setpriv``, and the private directory is
handed to that user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..errors import LabError, bad_value
from ..process.children import Children
from ..waiting import wait_until

#: The tables, one set shared by every run (``run`` tells the runs apart, so Spark reads
#: one table per kind). ``rows`` is the side effect; ``processed`` the idempotent
#: consumer's memory keyed by message id; ``processed_offsets`` the same keyed by offset
#: (the wrong key when the producer duplicated); ``outbox`` the transactional outbox.
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS orders_rows (
        run TEXT NOT NULL, message_id TEXT NOT NULL, instance TEXT NOT NULL,
        kafka_partition INTEGER NOT NULL, kafka_offset BIGINT NOT NULL, at DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS processed (
        run TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY (run, message_id))""",
    """CREATE TABLE IF NOT EXISTS processed_offsets (
        run TEXT NOT NULL, topic TEXT NOT NULL, kafka_partition INTEGER NOT NULL,
        kafka_offset BIGINT NOT NULL, PRIMARY KEY (run, topic, kafka_partition, kafka_offset))""",
    """CREATE TABLE IF NOT EXISTS outbox (
        run TEXT NOT NULL, message_id TEXT NOT NULL, published INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run, message_id))""",
)

TABLES = ("orders_rows", "processed", "processed_offsets", "outbox")


class Database:
    """A database URL and the one way the lab talks to it (DB-API, ``?`` placeholders)."""

    def __init__(self, url: str) -> None:
        if not isinstance(url, str):
            raise bad_value("database", url, "a URL: sqlite:///path or postgresql://...")
        parsed = urlparse(url)
        if parsed.scheme == "sqlite" and parsed.path:
            self.kind = "sqlite"
            self.path = Path("/" + parsed.path.lstrip("/"))
        elif parsed.scheme in ("postgresql", "postgres") and parsed.hostname:
            self.kind = "postgres"
            self.path = None
        else:
            raise bad_value("database", url, "a URL: sqlite:///absolute/path.db or "
                            "postgresql://user@host:port/dbname")
        self.url = url
        self.parsed = parsed

    def __repr__(self) -> str:
        return f"<Database {self.kind} {self.url}>"

    def connect(self) -> Any:
        """A new connection in autocommit mode: transactions are explicit (BEGIN)."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
            conn.execute("PRAGMA busy_timeout=60000")
            return conn
        import psycopg

        return psycopg.connect(self.url, autocommit=True, connect_timeout=10)

    def sql(self, text: str) -> str:
        """The statement in this driver's placeholder style."""
        return text if self.kind == "sqlite" else text.replace("?", "%s")

    def execute(self, conn: Any, text: str, args: Sequence[Any] = ()) -> Any:
        cur = conn.cursor()
        cur.execute(self.sql(text), tuple(args))
        return cur

    @contextlib.contextmanager
    def transaction(self, conn: Any) -> Iterator[Any]:
        """``BEGIN`` ... ``COMMIT`` (``ROLLBACK`` on error): one atomic unit of work.
        SQLite's ``BEGIN IMMEDIATE`` takes the write lock up front, so two instances
        that race on one message queue instead of failing on a lock upgrade."""
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE" if self.kind == "sqlite" else "BEGIN")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def create_schema(self) -> None:
        conn = self.connect()
        try:
            for statement in SCHEMA:
                conn.cursor().execute(statement)
        finally:
            conn.close()

    def query(self, text: str, args: Sequence[Any] = ()) -> list[tuple]:
        conn = self.connect()
        try:
            return list(self.execute(conn, text, args).fetchall())
        finally:
            conn.close()

    def rows(self, run: str) -> list[tuple[str, str, int, int]]:
        """(message_id, instance, partition, offset) of every row one run wrote."""
        return self.query("SELECT message_id, instance, kafka_partition, kafka_offset "
                          "FROM orders_rows WHERE run = ? ORDER BY at", (run,))

    # --- Spark's JDBC source -------------------------------------------------------
    @property
    def jdbc_url(self) -> str:
        """The URL Spark's JDBC source takes (the pinned drivers of ``jars.py`` jdbc)."""
        if self.kind == "sqlite":
            return f"jdbc:sqlite:{self.path}"
        p = self.parsed
        return f"jdbc:postgresql://{p.hostname}:{p.port or 5432}{p.path or '/postgres'}"

    @property
    def jdbc_options(self) -> dict[str, str]:
        options = {"url": self.jdbc_url}
        if self.kind == "sqlite":
            options["driver"] = "org.sqlite.JDBC"
        else:
            options["driver"] = "org.postgresql.Driver"
            if self.parsed.username:
                options["user"] = self.parsed.username
            if self.parsed.password:
                options["password"] = self.parsed.password
        return options


# --- a PostgreSQL server of our own -------------------------------------------------------


def postgres_bin(name: str) -> str:
    """The path of PostgreSQL's ``name`` binary (PATH, then /usr/lib/postgresql/*/bin)."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return candidate
    raise LabError(f"PostgreSQL's {name} was not found (PATH, /usr/lib/postgresql/*/bin): "
                   "install the postgresql server package, or use the SQLite default, or "
                   "pass the URL of a running server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> tuple[list[str], int | None, int | None]:
    """The ``setpriv`` prefix (and uid, gid) that drops root; nothing when not root."""
    if os.geteuid() != 0:
        return [], None, None
    for user in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            continue
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise LabError("PostgreSQL refuses to run as root and setpriv (util-linux) is "
                           "missing to run it as an unprivileged user")
        return ([setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                 "--clear-groups"], entry.pw_uid, entry.pw_gid)
    raise LabError("PostgreSQL refuses to run as root and there is no 'postgres' or "
                   "'nobody' user to run it as")


class PostgresServer:
    """A PostgreSQL server the lab starts on 127.0.0.1 in a private directory.

    ``initdb`` (trust auth for the local user ``lab``, no password: it listens on
    loopback only) then ``postgres -D dir -h 127.0.0.1 -p port``, in its own process
    group, watched by ``children``' reaper, which also removes the directory. Settings
    for a throw-away class database: no fsync (the lesson is about transactions between
    processes, not about surviving a power cut).
    """

    def __init__(self, children: Children, timeout: float = 60.0) -> None:
        self.children = children
        self.dir = Path(tempfile.mkdtemp(prefix="deliverylab-pg-"))
        children.cleanup(self.dir)
        prefix, uid, gid = _run_as()
        data = self.dir / "data"
        data.mkdir()
        if uid is not None:
            for path in (self.dir, data):
                os.chown(path, uid, gid)
        self.log = self.dir / "postgres.log"
        env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "HOME": str(self.dir)}
        init = children.start("initdb", [*prefix, postgres_bin("initdb"), "-D", str(data),
                                         "-U", "lab", "--auth=trust", "-E", "UTF8",
                                         "--no-sync"], self.dir / "initdb.log", env=env)
        if init.wait(timeout) != 0:
            children.check(init)
        children.stop(init)
        self.port = _free_port()
        self.proc = children.start("PostgreSQL", [
            *prefix, postgres_bin("postgres"), "-D", str(data), "-h", "127.0.0.1",
            "-p", str(self.port), "-k", str(self.dir), "-c", "fsync=off",
            "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            "-c", "max_connections=60"], self.log, env=env)
        self.url = f"postgresql://lab@127.0.0.1:{self.port}/postgres"
        wait_until(f"PostgreSQL on 127.0.0.1:{self.port} (log {self.log})", self._up,
                   timeout, check=lambda: children.check(self.proc))

    def _up(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url, connect_timeout=2):
                return True
        except psycopg.OperationalError:
            time.sleep(0.1)
            return False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        """Fast shutdown (SIGINT: abort transactions, exit), then remove the directory."""
        import signal

        self.children.stop(self.proc, timeout=20, sig=signal.SIGINT)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        state = "running" if self.proc.poll() is None else "stopped"
        return f"<PostgresServer {self.url} {state}, dir {self.dir}>"
