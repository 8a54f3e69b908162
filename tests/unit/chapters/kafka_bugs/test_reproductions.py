"""The published-bug reproductions without a cluster: their registry, arguments, verdicts.

The reproductions themselves run on a real broker
(tests/integration/chapters/kafka_bugs/test_reproductions.py); here the Checker's judgement of their
evidence is checked on hand-written histories.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka.admin import ConfigEntry, ConfigSource

from deliverylab import checker as C
from deliverylab.chapters.kafka_bugs import reproductions as bugs
from deliverylab.errors import BadValue, LabError, TimedOut
from deliverylab.history import History, Read


def test_every_bug_names_a_checker_anomaly_and_its_fix():
    for name, bug in bugs.BUGS.items():
        assert bug.name == name and bug.anomaly in (*C.ANOMALIES, bugs.HUNG)
        assert bug.reference and bug.fixed_by


def test_a_reproduction_needs_the_proxy_and_sane_times():
    bare = SimpleNamespace(proxies={})
    with pytest.raises(LabError, match="proxy=True"):
        bugs.expired_producer(bare)
    with pytest.raises(LabError, match="proxy=True"):
        bugs.stale_end_txn(bare)
    proxied = SimpleNamespace(proxies={1: object()})
    with pytest.raises(BadValue, match="expiration_ms"):
        bugs.expired_producer(proxied, expiration_ms=0)
    with pytest.raises(BadValue, match="hold_s"):
        bugs.expired_producer(proxied, expiration_ms=1500, hold_s=30.0)


def _expired_history(copies: int) -> tuple[History, list[Read]]:
    """What expired_producer records: one acknowledged send, a lost ack, a held retry."""
    h = History()
    h.record("nemesis", "fault", "info", fault="lose_ack")
    h.record("nemesis", "fault", "info", fault="hold_request")
    h.record("nemesis", "fault", "info", fault="release_held", detail="answered NONE")
    h.record("idempotent", "send", "ok", ["idempotent:0"], topic="t", partition=0, offset=0)
    reads = [Read("t", 0, o, "idempotent:0", "read_uncommitted") for o in range(copies)]
    return h, reads


def test_a_forgotten_producer_duplicate_is_judged_a_duplicate():
    h, reads = _expired_history(2)
    result = C.check(h, reads)
    rep = bugs.Reproduction("expired_producer", "bug", "t", h, reads, result, ["NONE"], 1.0)
    assert rep.anomalies == 1 and not result.valid
    assert "1 duplicates" in rep.summary() or "1 duplicate" in rep.summary()
    h, reads = _expired_history(1)
    fixed = bugs.Reproduction("expired_producer", "fixed", "t", h, reads, C.check(h, reads),
                              ["NONE"], 1.0)
    assert fixed.anomalies == 0 and fixed.to_dict()["result"]["valid"]
    rep.notes["held_s"] = 2.5
    assert rep.row() == {"variant": "bug", "anomalies": 1, "late request answered": "NONE",
                         "records read": len(rep.reads), "seconds": 1.0, "held_s": 2.5}
    table = bugs.table([rep, fixed])  # chapter 09's results table, one row per run
    assert table["variant"].tolist() == ["bug", "fixed"]
    assert table["anomalies"].tolist() == [1, 0]


def test_a_committed_value_of_an_aborted_transaction_is_an_aborted_read():
    h = History()
    h.record("shop", "begin_txn", "ok", txn="shop/txn-1")
    h.record("shop", "send", "ok", ["shop:0"], topic="t", partition=0, offset=0,
             txn="shop/txn-1")
    h.record("shop", "commit_txn", "ok", txn="shop/txn-1")
    h.record("shop", "begin_txn", "ok", txn="shop/txn-2")
    h.record("shop", "send", "ok", ["shop:1"], topic="t", partition=0, offset=2,
             txn="shop/txn-2")
    h.record("nemesis", "fault", "info", fault="inject_held", detail="answered NONE")
    h.record("shop", "abort_txn", "fail", txn="shop/txn-2", error="INVALID_TXN_STATE")
    torn = [Read("t", 0, 0, "shop:0", "read_committed"), Read("t", 0, 2, "shop:1",
                                                              "read_committed")]
    rep = bugs.Reproduction("stale_end_txn", "bug", "t", h, torn, C.check(h, torn),
                            ["NONE"], 1.0)
    assert rep.anomalies == 1 and rep.result.examples[C.ABORTED_READS][0]["value"] == "shop:1"
    intact = torn[:1]
    assert C.check(h, intact).counts[C.ABORTED_READS] == 0


def test_the_buttons_are_the_chapters_actions_and_record_their_runs(monkeypatch):
    from deliverylab.notebook import params

    runs: list = []
    specs = bugs.buttons(SimpleNamespace(proxies={1: object()}), runs=runs)
    assert tuple(s.label for s in specs) == bugs.ACTIONS
    assert params.SPECS["09_kafka_bugs"]["actions"].choices == bugs.ACTIONS
    fake = bugs.Reproduction("expired_producer", "bug", "t", History(), [],
                             C.check([], []), ["NONE"], 0.1)
    monkeypatch.setattr(bugs, "stale_end_txn", lambda cluster: fake)
    specs = bugs.buttons(SimpleNamespace(proxies={1: object()}), runs=runs)
    assert specs[2].method().startswith("Idempotence isn't forever (bug)")
    assert runs == [fake]


def _txn_history(end: bool) -> History:
    h = History()
    h.record("late-writer", "begin_txn", "ok", txn="late-writer/txn-1")
    h.record("late-writer", "send", "fail", ["late-writer:0"], topic="t",
             txn="late-writer/txn-1", error="_PURGE_INFLIGHT")
    if end:
        h.record("late-writer", "abort_txn", "ok", txn="late-writer/txn-1")
    return h


def test_a_partition_held_back_after_every_transaction_ended_is_hung():
    stuck = [{"partition": 0, "log_start_offset": 0, "high_watermark": 2,
              "last_stable_offset": 1}]
    moving = [{**stuck[0], "last_stable_offset": 2}]
    done = _txn_history(end=True)
    assert bugs.hung_partitions(done, stuck) == stuck
    assert bugs.hung_partitions(done, moving) == []
    with pytest.raises(LabError, match="late-writer/txn-1 is open"):
        bugs.hung_partitions(_txn_history(end=False), stuck)  # held back by design
    rep = bugs.Reproduction("hanging_transaction", "bug", "t", done, [], C.check(done, []),
                            ["NONE"], 1.0, {bugs.HUNG: stuck})
    assert rep.anomalies == 1


def test_find_hanging_output_is_parsed():
    text = ("Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\t"
            "LastTimestamp\tDuration(min)\t\nhanging-1\t0\t7\t0\t0\t1\t1795451329270\t0\t\n")
    rows = bugs.parse_hanging(text)
    assert rows == [{"Topic": "hanging-1", "Partition": "0", "ProducerId": "7",
                     "ProducerEpoch": "0", "CoordinatorEpoch": "0", "StartOffset": "1",
                     "LastTimestamp": "1795451329270", "Duration(min)": "0"}]
    header = text.splitlines()[0] + "\n"
    assert bugs.parse_hanging(header) == []  # what 4.1.1 prints when nothing hangs
    warned = "OpenJDK 64-Bit Server VM warning: Sharing is only supported for boot loader\n"
    assert bugs.parse_hanging(warned + text) == rows  # the JVM may print to stdout first


@pytest.mark.parametrize("output,expected", [
    ("", "header line"),  # nothing at all
    ("Topic\tPartition\tProducerId\n", "header line"),  # another version's columns
    ("Error: the broker is not available\n", "header line"),
    ("Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset LastTimestamp "
     "Duration(min)\nhanging-1 0 7\n", "rows of 8 columns"),  # a row cut short
])
def test_find_hanging_output_it_cannot_read_is_an_error_not_nothing_hangs(output, expected):
    """An empty list is the fixed variant's verdict: unreadable output must not be one."""
    with pytest.raises(LabError, match=expected) as info:
        bugs.parse_hanging(output)
    message = str(info.value)
    assert "\n" not in message and "Topic Partition ProducerId ProducerEpoch" in message
    assert repr(" ".join(output.split())[:120]) in message  # the start of what came


def test_after_repair_says_why_there_is_no_repair():
    bounds = [{"partition": 0, "log_start_offset": 0, "high_watermark": 3,
               "last_stable_offset": 3}]
    stuck = [{**bounds[0], "last_stable_offset": 1}]
    h = _txn_history(end=True)

    def run(notes, bug="hanging_transaction", late=("NONE",)):
        return bugs.Reproduction(bug, "bug", "t", h, [], C.check(h, []), list(late), 1.0,
                                 notes)

    assert run({bugs.HUNG: stuck, "after_repair": bounds}).after_repair() == bounds
    for notes, late, why in (({bugs.HUNG: []}, ["NOT_ENOUGH_REPLICAS"], "no partition hung"),
                             ({bugs.HUNG: stuck}, ["NONE"], "repair=False")):
        with pytest.raises(LabError, match=why) as info:
            run(notes, late=late).after_repair()
        assert "\n" not in str(info.value) and "topic t" in str(info.value)
    with pytest.raises(LabError, match="only a hanging_transaction run"):
        run({}, bug="expired_producer").after_repair()


class _Features:
    """A cluster whose ``kafka-features`` answers like Kafka 4.1.1's, with a level."""

    def __init__(self, level: int = 2) -> None:
        self.level, self.calls, self.nodes = level, [], [1]

    def tool(self, name: str, *args: str) -> str:
        assert name == "kafka-features"
        self.calls.append(args)
        if args[0] in ("upgrade", "downgrade"):
            self.level = int(args[2].split("=")[1])
            return ""
        return ("Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
                "FinalizedVersionLevel: 0\tEpoch: 5\n"
                "Feature: transaction.version\tSupportedMinVersion: 0\t"
                f"SupportedMaxVersion: 2\tFinalizedVersionLevel: {self.level}\tEpoch: 5\n")

    def log_path(self, node: int) -> str:
        return f"node-{node}.log"


def test_the_transaction_version_is_lowered_for_the_block_and_put_back():
    cluster = _Features(2)
    assert bugs.finalized_transaction_version(cluster) == 2
    with bugs.transaction_version(cluster, 1) as before:
        assert before == 2 and cluster.level == 1
    assert cluster.level == 2
    verbs = [c[0] for c in cluster.calls if c[0] != "describe"]
    assert verbs == ["downgrade", "upgrade"]
    with pytest.raises(RuntimeError), bugs.transaction_version(cluster, 0):
        raise RuntimeError("the block failed")
    assert cluster.level == 2  # put back even so


def test_a_transaction_version_outside_0_to_2_is_refused_in_one_line():
    with pytest.raises(BadValue, match="transaction.version"), \
            bugs.transaction_version(_Features(), 3):
        pass
    with pytest.raises(LabError, match="did not list"):
        bugs.finalized_transaction_version(SimpleNamespace(tool=lambda *a: "nothing"))


class _Brokers:
    """An admin over brokers that apply an altered config only after ``lag`` describes
    of it (a broker's metadata catching up with the controller)."""

    def __init__(self, nodes: list[int], lag: int = 0) -> None:
        self.nodes, self.lag = nodes, lag
        self.calls: list[list[str]] = []
        self.ops: list[tuple[str, str, str | None]] = []
        self.applied: dict[str, str | None] = {str(n): None for n in nodes}
        self.pending: dict[str, tuple[str | None, int]] = {}
        self.describes = 0

    def admin(self) -> _Brokers:
        return self

    def incremental_alter_configs(self, resources):
        self.calls.append([r.name for r in resources])
        for r in resources:
            entry = r.incremental_configs[0]
            self.ops.append((r.name, entry.incremental_operation.name, entry.value))
            self.pending[r.name] = (entry.value, self.lag)
        done = SimpleNamespace(result=lambda timeout: None)
        return {r: done for r in resources}

    def describe_configs(self, resources):
        (r,) = resources
        self.describes += 1
        if r.name in self.pending:
            value, left = self.pending[r.name]
            if left <= 0:
                self.applied[r.name] = value
                del self.pending[r.name]
            else:
                self.pending[r.name] = (value, left - 1)
        value = self.applied[r.name]
        source = (ConfigSource.DYNAMIC_BROKER_CONFIG if value is not None
                  else ConfigSource.STATIC_BROKER_CONFIG).value  # an int, as librdkafka's
        entry = ConfigEntry("producer.id.expiration.ms", value or "86400000", source=source)
        done = SimpleNamespace(result=lambda timeout: {entry.name: entry})
        return {r: done}


def test_a_broker_config_is_set_with_one_call_per_broker():
    """librdkafka refuses two BROKER resources in one call (_CONFLICT)."""
    brokers = _Brokers([1, 2, 3])
    bugs.set_broker_default(brokers, "producer.id.expiration.ms", 1500)
    assert brokers.calls == [["1"], ["2"], ["3"]]


def test_a_broker_config_is_set_only_once_every_broker_reports_it():
    """The controller's answer is not the broker's: each applies the change when its
    metadata catches up (a loaded CI host read the old value back after the call)."""
    brokers = _Brokers([1, 2], lag=3)
    bugs.set_broker_default(brokers, "producer.id.expiration.ms", 1500)
    assert brokers.applied == {"1": "1500", "2": "1500"} and not brokers.pending
    brokers.lag = 2
    bugs.set_broker_default(brokers, "producer.id.expiration.ms", None)
    assert brokers.applied == {"1": None, "2": None} and not brokers.pending


def test_a_broker_that_never_applies_the_config_times_out_naming_it(monkeypatch):
    brokers = _Brokers([1], lag=10**9)
    monkeypatch.setattr(bugs, "CONFIG_APPLIED_S", 0.3)
    with pytest.raises(TimedOut, match="every broker to report producer.id.expiration.ms=1500"):
        bugs.set_broker_default(brokers, "producer.id.expiration.ms", 1500)


def test_a_reproductions_broker_config_is_removed_after_it_even_on_failure():
    """The override lives for the ``with`` block: the next run starts from the default."""
    brokers = _Brokers([1, 2])
    with pytest.raises(RuntimeError, match="boom"):
        with bugs.broker_default(brokers, "producer.id.expiration.ms", 1500):
            raise RuntimeError("boom")
    assert brokers.ops == [("1", "SET", "1500"), ("2", "SET", "1500"),
                   ("1", "DELETE", None), ("2", "DELETE", None)]
