"""The four delivery modes, as plain configuration a student can read and change.

A mode is nothing but client settings plus a consumer commit strategy, and the list of
anomalies the mode *allows*: the Checker judges a run against that list, so "valid"
always means "what this mode promises held", never "nothing odd happened".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from . import checker as C
from . import faults
from .errors import bad_value

COMMIT_STRATEGIES = ("before", "after", "transaction")


@dataclass(frozen=True)
class DeliveryMode:
    """One delivery guarantee, end to end.

    Attributes:
        name: e.g. ``"AT_LEAST_ONCE"``.
        producer: librdkafka producer settings (dotted names, as in Kafka's docs).
        consumer: librdkafka consumer settings for the processing stage.
        commit: when the processing stage commits its input offsets: ``"before"``
            processing (at-most-once), ``"after"`` (at-least-once) or inside the output
            ``"transaction"`` (exactly-once).
        allowed: anomalies this mode permits (names from :mod:`deliverylab.checker`).
        claim: one sentence, shown in chapters and the matrix.
        txn_size: transactional modes: most values in one transaction.
        commit_interval_ms: transactional modes: a transaction commits once it has been
            open this long (or holds ``txn_size`` values), as applications do -- Kafka
            Streams' exactly-once default is 100 ms. Every transaction costs a fixed
            round of coordinator work (EndTxn, markers on every partition it wrote, the
            next AddPartitionsToTxn), ~75 ms on a 2-core laptop: committing every few
            values would make that the whole cost.
    """

    name: str
    producer: dict[str, Any]
    consumer: dict[str, Any]
    commit: str
    allowed: frozenset[str]
    claim: str
    txn_size: int = 1000
    commit_interval_ms: float = 100.0

    def __post_init__(self) -> None:
        if self.commit not in COMMIT_STRATEGIES:
            raise bad_value("commit", self.commit, " or ".join(COMMIT_STRATEGIES))

    @property
    def transactional(self) -> bool:
        return self.commit == "transaction"

    def allowed_under(self, fault: str) -> frozenset[str]:
        """What a run under ``fault`` may show: :attr:`allowed` plus what the fault
        causes by design (see :attr:`deliverylab.faults.Fault.permits`)."""
        return faults.allowed(self.allowed, fault, self.transactional)

    def with_commits(self, txn_size: int | None = None,
                     commit_interval_ms: float | None = None) -> DeliveryMode:
        """This mode, committing its transactions after ``txn_size`` values or
        ``commit_interval_ms``, whichever comes first (None: keep the mode's)."""
        if txn_size is not None and not (isinstance(txn_size, int)
                                         and not isinstance(txn_size, bool) and txn_size >= 1):
            raise bad_value("txn_size", txn_size, "a whole number of values >= 1")
        if commit_interval_ms is not None and not (
                isinstance(commit_interval_ms, (int, float))
                and not isinstance(commit_interval_ms, bool) and commit_interval_ms >= 0):
            raise bad_value("commit_interval_ms", commit_interval_ms,
                            "a number of milliseconds >= 0 (0: commit after every value)")
        return replace(self, txn_size=self.txn_size if txn_size is None else txn_size,
                       commit_interval_ms=(self.commit_interval_ms if commit_interval_ms
                                           is None else float(commit_interval_ms)))

    def commit_due(self, values: int, open_seconds: float) -> bool:
        """Should a transaction holding ``values`` values, open for ``open_seconds``,
        commit now? By size or by time, whichever comes first."""
        return values >= self.txn_size or open_seconds * 1000 >= self.commit_interval_ms

    def with_consumer(self, **settings: Any) -> DeliveryMode:
        return replace(self, consumer={**self.consumer, **_dotted(settings)})


def _dotted(settings: dict[str, Any]) -> dict[str, Any]:
    """Let Python keywords stand for Kafka's dotted names: request_timeout_ms=..."""
    return {k.replace("_", "."): v for k, v in settings.items()}


# A consumer that notices a dead group member fast enough for a class to watch.
_CONSUMER = {
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 1000,
    "max.poll.interval.ms": 10000,
}

AT_MOST_ONCE = DeliveryMode(
    name="AT_MOST_ONCE",
    # The leader alone acknowledges, and nothing is ever sent twice.
    producer={"acks": "1", "retries": 0, "enable.idempotence": False},
    consumer={**_CONSUMER, "isolation.level": "read_uncommitted"},
    commit="before",
    allowed=frozenset({C.LOST, C.PIPELINE_MISSING}),
    claim="Nothing is delivered twice, but acknowledged messages may be lost.",
)

AT_LEAST_ONCE = DeliveryMode(
    name="AT_LEAST_ONCE",
    # All in-sync replicas acknowledge, and the client retries until they do.
    producer={"acks": "all", "enable.idempotence": False, "retries": 2147483647,
              "max.in.flight.requests.per.connection": 5},
    consumer={**_CONSUMER, "isolation.level": "read_uncommitted"},
    commit="after",
    allowed=frozenset({C.DUPLICATES, C.PIPELINE_EXTRA, C.REORDERED, C.UNEXPECTED}),
    claim="Nothing acknowledged is lost, but retries and re-processing make duplicates.",
)

IDEMPOTENT = DeliveryMode(
    name="IDEMPOTENT",
    # The broker drops a retried batch it already has (producer id + sequence number).
    producer={"acks": "all", "enable.idempotence": True},
    consumer={**_CONSUMER, "isolation.level": "read_uncommitted"},
    commit="after",
    allowed=frozenset({C.PIPELINE_EXTRA}),
    claim="Producer retries no longer duplicate; a re-processing consumer still can.",
)

TRANSACTIONAL = DeliveryMode(
    name="TRANSACTIONAL",
    # Writes and input offsets commit atomically; readers see only committed data.
    producer={"acks": "all", "enable.idempotence": True, "transaction.timeout.ms": 30000},
    consumer={**_CONSUMER, "isolation.level": "read_committed"},
    commit="transaction",
    allowed=frozenset(),
    claim="Each input is reflected in the output exactly once, for read_committed readers.",
)

MODES: dict[str, DeliveryMode] = {
    m.name: m for m in (AT_MOST_ONCE, AT_LEAST_ONCE, IDEMPOTENT, TRANSACTIONAL)
}


# --- what the course claims for each cell of the anomaly matrix ------------------------
#: (mode, fault) -> {observed count: "always" | "never"}: what *every* run of that cell
#: shows ("always") or never shows ("never"), beyond being valid (nothing outside
#: ``mode.allowed_under(fault)``). Written out cell by cell, so each claim reads as the
#: chapter states it; a test checks every mode x every scenario fault has one.
CLAIMS: dict[tuple[str, str], dict[str, str]] = {
    # At most once: acks=1, no retries, commit before processing.
    ("AT_MOST_ONCE", "lose_ack"): {"acks_lost": "always", "duplicates": "never"},
    ("AT_MOST_ONCE", "isolate_leader"): {"lost": "always", "duplicates": "never"},
    ("AT_MOST_ONCE", "pause_broker"): {"duplicates": "never"},
    ("AT_MOST_ONCE", "crash_producer"): {"duplicates": "never"},
    ("AT_MOST_ONCE", "restart_producer"): {"duplicates": "always"},
    ("AT_MOST_ONCE", "crash_consumer"): {"pipeline_missing": "always",
                                         "pipeline_extra": "never"},
    # At least once: acks=all, retries, commit after processing.
    ("AT_LEAST_ONCE", "lose_ack"): {"acks_lost": "always", "duplicates": "always",
                                    "lost": "never"},
    ("AT_LEAST_ONCE", "isolate_leader"): {"lost": "never"},
    ("AT_LEAST_ONCE", "pause_broker"): {"lost": "never"},
    ("AT_LEAST_ONCE", "crash_producer"): {"lost": "never"},
    ("AT_LEAST_ONCE", "restart_producer"): {"duplicates": "always", "lost": "never"},
    ("AT_LEAST_ONCE", "crash_consumer"): {"pipeline_extra": "always",
                                          "pipeline_missing": "never"},
    # Idempotent producer: retries no longer duplicate; a new instance still does.
    ("IDEMPOTENT", "lose_ack"): {"acks_lost": "always", "duplicates": "never",
                                 "lost": "never"},
    ("IDEMPOTENT", "isolate_leader"): {"duplicates": "never", "lost": "never"},
    ("IDEMPOTENT", "pause_broker"): {"duplicates": "never", "lost": "never"},
    ("IDEMPOTENT", "crash_producer"): {"duplicates": "never", "lost": "never"},
    ("IDEMPOTENT", "restart_producer"): {"duplicates": "always", "lost": "never"},
    ("IDEMPOTENT", "crash_consumer"): {"pipeline_extra": "always",
                                       "pipeline_missing": "never"},
    # Transactions: every cell exactly once for read_committed readers.
    # The lost ack is a Produce inside an open transaction, committed or not.
    ("TRANSACTIONAL", "lose_ack"): {"acks_lost": "always", "ack_lost_in_txn": "always",
                                    "duplicates": "never", "lost": "never"},
    ("TRANSACTIONAL", "isolate_leader"): {"duplicates": "never", "lost": "never"},
    ("TRANSACTIONAL", "pause_broker"): {"duplicates": "never", "lost": "never"},
    ("TRANSACTIONAL", "crash_producer"): {"aborted_visible_uncommitted": "always",
                                          "aborted_reads": "never"},
    ("TRANSACTIONAL", "restart_producer"): {"zombie_fenced": "always",
                                           "aborted_visible_uncommitted": "always",
                                           "duplicates": "never"},
    ("TRANSACTIONAL", "crash_consumer"): {"aborted_visible_uncommitted": "always",
                                          "pipeline_missing": "never",
                                          "pipeline_extra": "never"},
}


def claim_failures(mode_name: str, fault: str, observed: dict[str, int],
                   valid: bool, violations: list[str] | None = None,
                   claims: dict[tuple[str, str], dict[str, str]] | None = None) -> list[str]:
    """What one run contradicts: its mode's promise (``valid``) and its cell's claim.

    A cell with no claim is itself a failure: every cell must say what it teaches.
    ``claims``: another table of the same shape (the Spark rows' claims live beside
    the Spark stage, :data:`deliverylab.scenario.SPARK_CLAIMS`); default :data:`CLAIMS`.
    """
    where = f"{mode_name}/{fault}"
    failures = []
    if not valid:
        failures.append(f"{where}: outside what {mode_name} allows: "
                        + ", ".join(violations or ["?"]))
    if fault == "none":
        return failures
    table = CLAIMS if claims is None else claims
    rules = table.get((mode_name, fault))
    if not rules:
        return [*failures, f"{where}: no claim is written for this cell"
                f"{' (modes.CLAIMS)' if claims is None else ''}"]
    for name, rule in rules.items():
        n = observed.get(name, 0)
        if rule == "always" and n == 0:
            failures.append(f"{where}: expected {name}, saw none")
        elif rule == "never" and n > 0:
            failures.append(f"{where}: expected no {name}, saw {n}")
    return failures


def mode(name: str | DeliveryMode) -> DeliveryMode:
    """Look a mode up by name (case-insensitive, ``-`` or ``_``), or pass one through."""
    if isinstance(name, DeliveryMode):
        return name
    key = str(name).upper().replace("-", "_")
    if key not in MODES:
        raise bad_value("mode", name, "one of " + ", ".join(MODES))
    return MODES[key]
