"""The Inspector on real brokers and real Spark, checked against the Python checker.

Each scenario writes values whose places are known from the producers' own delivery
reports (the History), then asks Spark and the checker the same question. Expected
offsets come from the delivery reports, never from assumptions about the log layout,
so a marker is "an offset no send was acknowledged at".
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from deliverylab import checker
from deliverylab.clients import Recorder, config
from deliverylab.cluster import Cluster
from deliverylab.errors import BadValue
from deliverylab.history import History
from deliverylab.notebook import plots
from deliverylab.process.children import child_env
from deliverylab.spark import inspector as inspector_module
from deliverylab.spark import session as spark_session
from deliverylab.spark.inspector import Inspector
from deliverylab.values import ValueId, encode

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


@pytest.fixture(scope="module")
def cluster1() -> Iterator[Cluster]:
    with Cluster.start(brokers=1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def inspector(cluster1: Cluster) -> Inspector:
    return Inspector(cluster1)


def new_topic(cluster: Cluster, partitions: int) -> str:
    return cluster.create_topic(f"insp-{uuid.uuid4().hex[:8]}", partitions=partitions)


class Sender:
    """A raw producer (settings per test) whose sends go through the lab's one
    :class:`~deliverylab.clients.Recorder`."""

    def __init__(self, cluster: Cluster, topic: str, history: History, process: str,
                 **settings: object) -> None:
        self.process = process
        self.recorder = Recorder(history, process, topic)
        self.producer = Producer(config(cluster.bootstrap_servers, acks="all", **settings))
        self.txn: str | None = None

    def send(self, seq: int, partition: int = 0) -> None:
        self.recorder.send(self.producer, ValueId(self.process, seq), partition, self.txn)

    def flush(self) -> None:
        assert self.producer.flush(30) == 0, "messages still queued after 30 s"


def acked_at(history: History, values: set[str] | None = None) -> dict[str, list[list[int]]]:
    """value -> sorted [partition, offset] of its acknowledged sends."""
    out: dict[str, list[list[int]]] = {}
    for op in history:
        if op.kind == "send" and op.outcome == "ok" and (values is None or op.values[0] in values):
            out.setdefault(op.values[0], []).append([op.partition, op.offset])
    return {v: sorted(places) for v, places in out.items()}


# --- a duplicated value ------------------------------------------------------------------


@pytest.fixture(scope="module")
def duplicated(cluster1: Cluster) -> tuple[str, History]:
    """Ten values over three partitions, value 4 written twice on purpose."""
    topic, history = new_topic(cluster1, 3), History()
    rec = Sender(cluster1, topic, history, "dup")
    for seq in range(10):
        rec.send(seq, partition=seq % 3)
    rec.send(4, partition=2)  # the same value again, in another partition
    rec.flush()
    assert len(history) == 11 and all(op.outcome == "ok" for op in history)
    return topic, history


def test_duplicate_shows_in_spark_and_in_checker(inspector, duplicated) -> None:
    topic, history = duplicated
    spark_dups = inspector.duplicates(topic).toPandas()
    assert list(spark_dups["value"]) == ["dup:4"]
    row = spark_dups.iloc[0]
    assert row["copies"] == 2 and (row["producer"], row["seq"]) == ("dup", 4)
    expected = acked_at(history, {"dup:4"})["dup:4"]
    assert [list(map(int, pair)) for pair in row["offsets"]] == expected

    reads = inspector.reads(topic)
    py_dups = checker.duplicates(reads)
    assert [(d["value"], d["copies"], d["offsets"]) for d in py_dups] == [
        ("dup:4", 2, expected)]
    result = checker.check(history, reads, allowed={checker.DUPLICATES})
    assert result.counts[checker.DUPLICATES] == 1 and result.counts[checker.LOST] == 0


def test_reads_agree_with_spark_topic_and_history(inspector, duplicated) -> None:
    topic, history = duplicated
    reads = inspector.reads(topic, "read_uncommitted")
    assert {r.reader for r in reads} == {"read_uncommitted"}
    spark_rows = inspector.topic(topic, "read_uncommitted").select(
        "partition", "offset", "value").collect()
    assert sorted((r.partition, r.offset, r.value) for r in reads) == sorted(
        (r["partition"], r["offset"], r["value"]) for r in spark_rows)
    # Every record sits where its send's delivery report said.
    from_history = sorted((p, o, v) for v, places in acked_at(history).items()
                          for p, o in places)
    assert sorted((r.partition, r.offset, r.value) for r in reads) == from_history


def test_history_join_counts_reads_per_value(inspector, duplicated, tmp_path) -> None:
    topic, history = duplicated
    path = history.save(tmp_path / "history.jsonl")
    for source in (history, path):  # in memory and as the saved JSON Lines file
        joined = inspector.history_join(topic, source).toPandas().set_index("value")
        assert len(joined) == 10
        assert set(joined["outcome"]) == {"ok"}
        assert joined.loc["dup:4", "times_read"] == 2 and joined.loc["dup:4", "sends"] == 2
        assert (joined.drop(index="dup:4")["times_read"] == 1).all()
        assert joined["txn_fate"].isna().all()


def test_partition_summary_counts_records(inspector, duplicated) -> None:
    topic, _ = duplicated
    summary = inspector.partition_summary(topic).toPandas()
    assert list(summary["partition"]) == [0, 1, 2]
    # 0,3,6,9 | 1,4,7 | 2,5,8 + the second copy of 4
    assert list(summary["records_committed"]) == [4, 3, 4]
    assert (summary["records_uncommitted"] == summary["records_committed"]).all()
    assert (summary["high_watermark"] == summary["last_stable_offset"]).all()
    assert (summary["offset_span"] == summary["records_committed"]).all()  # no markers here


# --- an aborted transaction ------------------------------------------------------------


@pytest.fixture(scope="module")
def transactional(cluster1: Cluster, inspector: Inspector) -> tuple[str, History]:
    """One aborted then one committed transaction, each writing to both partitions."""
    topic, history = new_topic(cluster1, 2), History()
    rec = Sender(cluster1, topic, history, "txn",
                   **{"transactional.id": f"insp-{topic}", "enable.idempotence": True})
    rec.producer.init_transactions(30)
    for n, (first, commit) in enumerate(((0, False), (4, True))):
        rec.txn = f"txn/{n}"
        rec.producer.begin_transaction()
        for seq in range(first, first + 4):
            rec.send(seq, partition=seq % 2)
        rec.flush()
        if commit:
            rec.producer.commit_transaction(30)
        else:
            rec.producer.abort_transaction(30)
        history.record("txn", "commit_txn" if commit else "abort_txn", "ok", txn=rec.txn)
    # commit_transaction() returns before the markers reach the partitions: until then
    # read_committed stops at the LSO. Wait for the log to settle, as a run's drain does.
    inspector.wait_stable(topic, timeout=30)
    return topic, history


ABORTED_VALUES = {f"txn:{s}" for s in range(4)}
COMMITTED_VALUES = {f"txn:{s}" for s in range(4, 8)}


def test_aborted_records_only_under_read_uncommitted(inspector, transactional) -> None:
    topic, history = transactional
    seen = {iso: {r.value for r in inspector.reads(topic, iso)}
            for iso in ("read_committed", "read_uncommitted")}
    assert seen["read_committed"] == COMMITTED_VALUES
    assert seen["read_uncommitted"] == ABORTED_VALUES | COMMITTED_VALUES

    aborted = inspector.aborted(topic).toPandas()
    where = acked_at(history, ABORTED_VALUES)
    assert sorted(aborted["value"]) == sorted(ABORTED_VALUES)
    assert sorted([p, o] for p, o in zip(aborted["partition"], aborted["offset"],
                                         strict=True)) == sorted(
        place for places in where.values() for place in places)

    # The checker, fed Spark's reads, agrees: aborted reads under read_uncommitted only.
    for iso, expected in (("read_uncommitted", ABORTED_VALUES), ("read_committed", set())):
        found = checker.aborted_reads(history, inspector.reads(topic, iso))
        assert {f["value"] for f in found} == expected, iso
    result = checker.check(history, inspector.reads(topic))
    assert result.valid and result.counts[checker.LOST] == 0


def test_offset_gap_for_each_marker_under_both_isolations(inspector, transactional) -> None:
    topic, history = transactional
    summary = inspector.partition_summary(topic).toPandas().set_index("partition")
    records = {p: {o for places in acked_at(history).values() for q, o in places if q == p}
               for p in (0, 1)}
    aborted_offsets = {p: {o for places in acked_at(history, ABORTED_VALUES).values()
                           for q, o in places if q == p} for p in (0, 1)}
    views = {iso: inspector.offset_gaps(topic, iso).toPandas()
             for iso in ("read_committed", "read_uncommitted")}
    for p in (0, 1):
        hw = int(summary.loc[p, "high_watermark"])
        markers = set(range(hw)) - records[p]
        assert len(markers) == 2, f"partition {p}: one abort and one commit marker"
        assert summary.loc[p, "records_committed"] == 2
        assert summary.loc[p, "records_uncommitted"] == 4
        assert summary.loc[p, "offset_span"] == 6  # 4 records + 2 markers: never count spans
        for iso, view in views.items():
            gaps = view[view["partition"] == p]
            by_kind: dict[str, set[int]] = {}
            for g in gaps.itertuples():
                assert g.size == g.last_offset - g.first_offset + 1
                by_kind.setdefault(g.kind, set()).update(range(g.first_offset,
                                                               g.last_offset + 1))
            assert by_kind.get("marker") == markers, (iso, p)
            # Each marker here stands alone: a gap of its own.
            assert len(gaps[gaps["kind"] == "marker"]) == 2, (iso, p)
            if iso == "read_committed":
                assert by_kind.get("aborted") == aborted_offsets[p]
            else:
                assert "aborted" not in by_kind
            assert "pending" not in by_kind


def test_history_join_shows_transaction_fates(inspector, transactional) -> None:
    topic, history = transactional
    joined = inspector.history_join(topic, history).toPandas().set_index("value")
    assert set(joined.index) == ABORTED_VALUES | COMMITTED_VALUES
    for value in ABORTED_VALUES:
        assert joined.loc[value, "txn_fate"] == "aborted"
        assert joined.loc[value, "times_read"] == 0
    for value in COMMITTED_VALUES:
        assert joined.loc[value, "txn_fate"] == "committed"
        assert joined.loc[value, "times_read"] == 1
    uncommitted = inspector.history_join(topic, history, "read_uncommitted").toPandas()
    assert (uncommitted["times_read"] == 1).all()


def test_open_transaction_is_pending_not_aborted(cluster1, inspector) -> None:
    topic, history = new_topic(cluster1, 1), History()
    plain = Sender(cluster1, topic, history, "plain")
    plain.send(0)
    plain.flush()  # offset 0: a record outside any transaction
    rec = Sender(cluster1, topic, history, "open",
                   **{"transactional.id": f"insp-{topic}", "enable.idempotence": True})
    rec.producer.init_transactions(30)
    rec.producer.begin_transaction()
    rec.txn = "open/0"
    for seq in (1, 2):
        rec.send(seq)
    rec.flush()
    try:
        summary = inspector.partition_summary(topic).toPandas().iloc[0]
        assert summary["high_watermark"] == 3 and summary["last_stable_offset"] == 1
        gaps = inspector.offset_gaps(topic).toPandas()
        assert list(zip(gaps["first_offset"], gaps["last_offset"], gaps["kind"],
                        strict=True)) == [(1, 2, "pending")]
        assert inspector.aborted(topic).count() == 0
        assert inspector.topic(topic).count() == 1
    finally:
        rec.producer.commit_transaction(30)
    inspector.wait_stable(topic, timeout=30)
    gaps = inspector.offset_gaps(topic).toPandas()
    assert list(zip(gaps["first_offset"], gaps["kind"], strict=True)) == [(3, "marker")]


def test_split_reads_see_the_same_records(cluster1, inspector, monkeypatch) -> None:
    """Big reads run several Spark tasks per Kafka partition (Inspector._raw). A split
    may end on a marker, or hold nothing but aborted records, and must change no view.
    Forced here on a small transactional topic: one partition, offsets 0-2 an aborted
    transaction, 3 its marker, 4-6 a committed one (value 4 twice: a duplicate), 7 its
    marker, so two tasks meet at offset 4 and the first reads nothing committed."""
    topic, history = new_topic(cluster1, 1), History()
    rec = Sender(cluster1, topic, history, "split",
                 **{"transactional.id": f"insp-{topic}", "enable.idempotence": True})
    rec.producer.init_transactions(30)
    for n, (seqs, commit) in enumerate((((0, 1, 2), False), ((3, 4, 4), True))):
        rec.txn = f"split/{n}"
        rec.producer.begin_transaction()
        for seq in seqs:
            rec.send(seq)
        rec.flush()
        if commit:
            rec.producer.commit_transaction(30)
        else:
            rec.producer.abort_transaction(30)
    inspector.wait_stable(topic, timeout=30)

    def views() -> dict[str, object]:
        out: dict[str, object] = {}
        for iso in ("read_committed", "read_uncommitted"):
            out[f"topic {iso}"] = sorted(tuple(r) for r in inspector.topic(topic, iso).select(
                "partition", "offset", "value").collect())
            out[f"gaps {iso}"] = [tuple(r) for r in inspector.offset_gaps(topic, iso).collect()]
        out["duplicates"] = [(r.value, r.copies, [list(p) for p in r.offsets])
                             for r in inspector.duplicates(topic).collect()]
        out["aborted"] = [tuple(r) for r in inspector.aborted(topic).select(
            "partition", "offset", "value").collect()]
        return out

    whole = views()
    assert whole["duplicates"] and whole["aborted"]  # the case this test is about
    monkeypatch.setattr(inspector_module, "_SPLIT_FROM", 0)
    raw = inspector._raw(topic, "read_committed", inspector.bounds(topic))
    assert raw.rdd.getNumPartitions() > 1, "the read was not split: the test proves nothing"
    assert views() == whole


# --- odd records and bad arguments -----------------------------------------------------


def test_non_lab_values_give_nulls_not_errors(cluster1, inspector) -> None:
    topic = new_topic(cluster1, 1)
    producer = Producer(config(cluster1.bootstrap_servers))
    for value in (b"not json", b'{"producer": 5}', b"[1, 2]", None, b"\xff\xfe",
                  encode("ok", 1, payload_size=10)):
        producer.produce(topic, value, b"k", partition=0)
    assert producer.flush(30) == 0
    rows = inspector.topic(topic).orderBy("offset").collect()
    assert [r["value"] for r in rows] == [None] * 5 + ["ok:1"]
    assert rows[-1]["payload_length"] == 10 and rows[-1]["key"] == "k"
    assert [r.value for r in inspector.reads(topic)] == [None] * 5 + ["ok:1"]
    # Five records without a value id are not five copies of one value.
    assert inspector.duplicates(topic).count() == 0


def test_lab_values_decode_as_from_json_does(cluster1, inspector) -> None:
    """The duplicates view cuts values in values.encode's exact layout by position
    (inspector._lab_value) and leaves the rest to from_json: both must give what
    from_json alone gives, on values at and just past the edges of that layout. Each
    value is written twice, so each decoded one is a duplicate."""
    from pyspark.sql import functions as F

    odd = [
        encode("p", 1), encode("p", 2, payload_size=20), encode("a:b", 3), encode("", 7),
        encode("p", -3), encode("p", 2**62), encode("p", 10**17), encode('q"uote', 4),
        encode("\u00e9", 5), '{"producer":"\u00e9","seq":5,"payload":""}'.encode(),
        b'{"producer":"p","seq":-0,"payload":""}', b'{"producer":"p","seq":007,"payload":""}',
        b'{"producer":"p","seq":99999999999999999999,"payload":""}',
        b'{"producer": "p", "seq": 1, "payload": ""}', b'{"seq":1,"producer":"p","payload":""}',
        b'{"producer":"p","seq":1,"payload":""}\n',
        '{"producer":"p","seq":9,"payload":""}\u2028'.encode(),
        b'{"producer":"p","seq":"6","payload":""}', b'{"producer":"p","seq":6.0,"payload":""}',
        b'{"producer":"p","seq":8,"payload":"\\\\"}', b'{"producer":"p","seq":8,"payload":"\x01"}',
        b'{"producer":"p","seq":1,"payload":""}{}', b'{"producer":"p","seq":1}',
        b'{"producer":"p","seq":11,"payload":5}', b"not json", None, b"\xff\xfe",
    ]
    topic = new_topic(cluster1, 1)
    producer = Producer(config(cluster1.bootstrap_servers))
    for value in odd + odd:
        producer.produce(topic, value, b"k", partition=0)
    assert producer.flush(30) == 0
    bounds = inspector.bounds(topic)
    raw = inspector._raw(topic, "read_committed", bounds, headers=False)
    fast = raw.where(F.col("value").cast("string").rlike(inspector_module._ENCODED)).count()
    # The 7 values in encode's layout (seq up to 18 digits) take the fast path at least.
    assert fast >= 2 * 7, "the layout's fast path was not taken: the test proves nothing"
    parsed = F.from_json(F.col("value").cast("string"), inspector_module._value_schema(),
                         {"mode": "PERMISSIVE"})
    reference = sorted(
        (r["offset"], r["producer"], r["seq"]) for r in raw.select(
            "offset", parsed.getField("producer").alias("producer"),
            parsed.getField("seq").alias("seq")).collect())
    decoded = sorted((r["offset"], r["producer"], r["seq"]) for r in inspector._lab_values(
        topic, "read_committed", bounds).collect())
    assert decoded == reference
    groups: dict[tuple[str, int], list[list[int]]] = {}
    for offset, prod, seq in reference:
        if prod is not None and seq is not None:
            groups.setdefault((prod, seq), []).append([0, offset])
    expected = [(f"{p}:{q}", p, q, len(places), places)
                for (p, q), places in sorted(groups.items()) if len(places) > 1]
    assert len(expected) > 10
    got = [(r.value, r.producer, r.seq, r.copies, [list(x) for x in r.offsets])
           for r in inspector.duplicates(topic).collect()]
    assert got == expected


def test_bad_arguments_name_the_value(inspector, duplicated) -> None:
    topic, _ = duplicated
    with pytest.raises(BadValue, match="isolation='serializable'.*read_committed"):
        inspector.topic(topic, "serializable")
    with pytest.raises(BadValue, match="name='no-such-topic'.*existing topic"):
        inspector.duplicates("no-such-topic")
    with pytest.raises(BadValue, match="cluster=42"):
        Inspector(42)


# --- the session's Kafka source: DataSource V2 -----------------------------------------


def test_kafka_batch_reads_and_writes_take_data_source_v2(cluster1, inspector) -> None:
    """The session leaves "kafka" out of useV1SourceList (spark.session._start): the
    Inspector's reads are V2 scans, with no external Row per record. Batch writes are
    then the V2 writer, which refuses the default save mode; mode("append"), as the
    streaming chapter's Kafka sink writes, puts every row where it was sent, once."""
    topic = new_topic(cluster1, 3)
    rows = [(f"k{seq}", encode("w", seq).decode(), seq % 3) for seq in range(30)]
    frame = inspector.spark.createDataFrame(rows, "key string, value string, partition int")
    write = (frame.write.format("kafka")
             .option("kafka.bootstrap.servers", cluster1.bootstrap_servers)
             .option("topic", topic))
    with pytest.raises(Exception, match="ErrorIfExists"):
        write.save()
    write.mode("append").save()
    got = inspector.topic(topic).select("partition", "key", "value").collect()
    assert sorted(tuple(r) for r in got) == sorted(
        (partition, key, f"w:{seq}") for seq, (key, _, partition) in enumerate(rows))
    plan = inspector._raw(topic, "read_committed", inspector.bounds(topic))
    text = plan._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan" in text and "KafkaScan" in text, text


# --- plots ----------------------------------------------------------------------------


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5_000


def test_plots_render_to_png(inspector, duplicated, transactional, tmp_path) -> None:
    topic, history = duplicated
    reads = inspector.reads(topic)
    faults = [{"time": 0.0, "name": "lose_ack"}, {"time": 0.01, "name": "kill_leader",
                                                  "end": 0.02}]
    fig = plots.timeline(history, faults, duplicates=checker.duplicates(reads),
                         lost=checker.lost(history, reads), save=tmp_path / "timeline.png")
    assert _is_png(tmp_path / "timeline.png")
    assert fig._repr_png_()[:4] == b"\x89PNG"  # what Jupyter and papermill embed

    txn_topic, _ = transactional
    summary = inspector.partition_summary(txn_topic).toPandas()
    plots.offset_strips(inspector.offset_gaps(txn_topic).toPandas(), summary,
                        title="read_committed", save=tmp_path / "strips.png")
    plots.offset_strips(inspector.offset_gaps(txn_topic, "read_uncommitted"), summary,
                        aborted=inspector.aborted(txn_topic).toPandas(),
                        title="read_uncommitted", save=tmp_path / "strips_uncommitted.png")
    assert _is_png(tmp_path / "strips.png") and _is_png(tmp_path / "strips_uncommitted.png")


_MAPPED = """
import sys
from deliverylab.spark import session as inspector
opts = " ".join([inspector._driver_java_options(), "-Xshare:on", *sys.argv[1:]])
print("options", opts)
spark = inspector._start("local[1]", {"spark.driver.extraJavaOptions": opts})
print("version", spark.version)
"""


def _session_with_xshare_on(*extra: str, cache: Path | None = None
                            ) -> subprocess.CompletedProcess:
    env = {**child_env(), **({"DELIVERYLAB_CACHE": str(cache)} if cache else {})}
    return subprocess.run([sys.executable, "-c", _MAPPED, *extra], env=env,
                          capture_output=True, text=True, timeout=180)


def test_setup_recorded_the_spark_archive_the_session_maps(tmp_path) -> None:
    """``-Xshare:on`` makes a driver JVM that cannot map its archive exit at launch, so a
    session starting here really loads its classes from ``make setup``'s archive (in a
    child process: one driver JVM per Python process)."""
    archive = spark_session.class_archive()
    assert archive.exists(), "make setup records it: run `make setup`"
    done = _session_with_xshare_on()
    assert f"-XX:SharedArchiveFile={archive}" in done.stdout, done.stdout[-2000:]
    assert done.returncode == 0 and "version" in done.stdout, done.stderr[-2000:]
    # The same launch with an archive that is not there fails (the JVM takes the last
    # of a repeated flag): the check above can fail.
    done = _session_with_xshare_on(f"-XX:SharedArchiveFile={tmp_path / 'none.jsa'}")
    assert done.returncode != 0 and "version" not in done.stdout
    assert "shared archive" in done.stdout + done.stderr


def test_a_class_cache_maps_the_archive_it_shares_with_the_labs(tmp_path) -> None:
    """The class cache (``make classroom``) takes the lab's own Spark archive instead of
    recording another (``host.share_spark_archive``): a session whose cache is the class
    cache maps it under ``-Xshare:on``, though it was recorded with the other cache."""
    from deliverylab.classroom.hub.host import share_spark_archive
    from deliverylab.runtime import jars

    own = jars.cache_dir()
    assert spark_session.class_archive().exists(), "make setup records it: run `make setup`"
    for component in ("spark-kafka", "jdbc"):  # the jars, as prepare_cache links them
        (tmp_path / jars.COMPONENTS[component].dir).symlink_to(jars.component_dir(component))
    shared = share_spark_archive(own, tmp_path)
    assert shared is not None and shared.samefile(spark_session.class_archive())
    done = _session_with_xshare_on(cache=tmp_path)
    assert f"-XX:SharedArchiveFile={shared}" in done.stdout, done.stdout[-2000:]
    assert done.returncode == 0 and "version" in done.stdout, done.stderr[-2000:]
