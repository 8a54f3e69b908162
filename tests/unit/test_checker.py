"""Every detector on hand-written histories: it fires on its anomaly, with the right
count and example, and stays silent on a clean history."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest

from deliverylab import checker
from deliverylab.checker import (
    ABORTED_READS,
    DUPLICATES,
    LOST,
    PIPELINE_EXTRA,
    PIPELINE_MISSING,
    REORDERED,
    UNEXPECTED,
    UNSEEN,
    aborted_reads,
    check,
    duplicates,
    lost,
    pipeline_exactly_once,
    reads_from_records,
    reordered,
    txn_fates,
    unexpected,
    unseen,
)
from deliverylab.errors import BadValue
from deliverylab.history import Op, Read, parse_value
from deliverylab.modes import MODES
from deliverylab.values import ValueId, encode


def send(value, outcome="ok", *, offset=None, topic="t", partition=0, txn=None, proc="producer-0",
         error=None):
    return Op(proc, "send", outcome, 0.0, (value,), topic, partition, offset, txn, error)


def txn_op(kind, txn, outcome="ok", proc="producer-0"):
    return Op(proc, kind, outcome, 0.0, txn=txn)


def read(value, offset, *, topic="t", partition=0, reader="read_committed"):
    return Read(topic, partition, offset, value, reader)


def clean():
    history = [send(f"producer-0:{i}", offset=i) for i in range(3)]
    reads = [read(f"producer-0:{i}", i) for i in range(3)]
    return history, reads


def test_clean_history_is_silent_everywhere():
    history, reads = clean()
    assert lost(history, reads) == []
    assert unseen(history, reads) == []
    assert duplicates(reads) == []
    assert aborted_reads(history, reads) == []
    assert reordered(reads) == []
    assert unexpected(history, reads) == []
    result = check(history, reads)
    assert result.valid
    assert set(result.counts.values()) == {0}
    assert "No anomaly found" in result.summary()
    assert "valid" in result.summary()


# --- lost / unseen -------------------------------------------------------------------


def test_lost_fires_on_an_acknowledged_value_never_read():
    history, reads = clean()
    history.append(send("producer-0:3", offset=3))
    (finding,) = lost(history, reads)
    assert finding["value"] == "producer-0:3"
    assert (finding["topic"], finding["partition"], finding["offset"]) == ("t", 0, 3)
    result = check(history, reads)
    assert result.counts[LOST] == 1 and not result.valid
    assert result.examples[LOST][0]["value"] == "producer-0:3"


def test_lost_ignores_failed_and_indefinite_sends():
    history, reads = clean()
    history += [send("producer-0:3", "fail"), send("producer-0:4", "info")]
    assert lost(history, reads) == []


def test_lost_is_per_topic():
    # The value was acked in topic "t" but only read in "other".
    history = [send("producer-0:0", offset=0)]
    assert len(lost(history, [read("producer-0:0", 0, topic="other")])) == 1


def test_a_value_is_found_at_its_acked_place_or_anywhere_else_in_its_topic():
    # The check looks at the acked place first, then among the other records.
    history = [send("producer-0:0", offset=0), send("producer-0:1", offset=1),
               send("producer-0:2", offset=2), send("producer-0:3", offset=3, partition=1)]
    reads = [read("producer-0:0", 0),  # at its place
             read("producer-0:9", 1), read("producer-0:1", 7),  # its place rewritten; later
             read("producer-0:2", 5, partition=1),  # in another partition
             read("producer-0:3", 4), read("producer-0:3", 3, partition=1)]  # and a copy
    assert [f["value"] for f in lost(history, reads)] == []
    assert [(f["value"], f["offsets"]) for f in duplicates(reads)] == [
        ("producer-0:3", [[0, 4], [1, 3]])]
    assert [(f["value"], f["why"]) for f in unexpected(history, reads)] == [
        ("producer-0:9", "never sent")]
    # Its place holds another value and it is nowhere else: lost.
    assert [f["value"] for f in lost(history, reads[:1] + reads[3:])] == ["producer-0:1"]


def test_a_value_resent_after_a_timeout_counts_as_acknowledged():
    history = [send("producer-0:0", "info"), send("producer-0:0", "ok", offset=5)]
    assert len(lost(history, [])) == 1
    assert unseen(history, []) == []


def test_unseen_reports_indefinite_sends_but_does_not_invalidate():
    history, reads = clean()
    history.append(send("producer-0:3", "info"))
    (finding,) = unseen(history, reads)
    assert finding["value"] == "producer-0:3"
    result = check(history, reads)
    assert result.counts[UNSEEN] == 1
    assert result.valid
    assert "information, not an error" in result.summary()


def test_an_indefinite_send_that_was_written_is_neither_lost_nor_unseen():
    history = [send("producer-0:0", "info")]
    reads = [read("producer-0:0", 0)]
    assert lost(history, reads) == [] and unseen(history, reads) == []


# --- duplicates ----------------------------------------------------------------------


def test_duplicates_fire_with_every_copy_offset():
    history, reads = clean()
    reads.append(read("producer-0:1", 3))
    (finding,) = duplicates(reads)
    assert finding == {
        "value": "producer-0:1",
        "topic": "t",
        "copies": 2,
        "offsets": [[0, 1], [0, 3]],
    }
    assert check(history, reads).counts[DUPLICATES] == 1


def test_same_record_seen_twice_or_in_two_topics_is_not_a_duplicate():
    reads = [
        read("producer-0:0", 0, reader="read_committed"),
        read("producer-0:0", 0, reader="read_uncommitted"),  # same record, other view
        read("producer-0:0", 5, topic="out"),  # a pipeline's copy in its output topic
    ]
    assert duplicates(reads) == []


# --- transactions --------------------------------------------------------------------


def test_txn_fates():
    history = [
        txn_op("commit_txn", "a"),
        txn_op("abort_txn", "b"),
        txn_op("commit_txn", "c", "info"),
        send("producer-0:0", txn="d"),  # never committed: the producer crashed
        txn_op("commit_txn", "e", "fail"),
        txn_op("commit_txn", "f", "info"),
        txn_op("commit_txn", "f", "ok"),  # retried commit succeeded
    ]
    assert txn_fates(history) == {
        "a": "committed",
        "b": "aborted",
        "c": "unknown",
        "d": "aborted",
        "e": "aborted",
        "f": "committed",
    }


def txn_history():
    """txn-1 aborted (value 0 at offset 0), txn-2 committed (value 1 at offset 2)."""
    return [
        send("producer-0:0", offset=0, txn="producer-0/txn-1"),
        txn_op("abort_txn", "producer-0/txn-1"),
        send("producer-0:1", offset=2, txn="producer-0/txn-2"),
        txn_op("commit_txn", "producer-0/txn-2"),
    ]


def test_aborted_reads_fire_on_read_uncommitted_view():
    history = txn_history()
    uncommitted = [read("producer-0:0", 0, reader="read_uncommitted"), read("producer-0:1", 2)]
    (finding,) = aborted_reads(history, uncommitted)
    assert finding == {
        "value": "producer-0:0",
        "topic": "t",
        "partition": 0,
        "offset": 0,
        "txn": "producer-0/txn-1",
    }
    result = check(history, uncommitted)
    assert result.counts[ABORTED_READS] == 1 and not result.valid


def test_read_committed_view_of_transactions_is_clean():
    history = txn_history()
    committed = [read("producer-0:1", 2)]
    assert aborted_reads(history, committed) == []
    assert lost(history, committed) == []  # the aborted value was never owed
    assert check(history, committed).valid


def test_committed_transaction_value_missing_is_lost():
    history = txn_history()
    assert [f["value"] for f in lost(history, [])] == ["producer-0:1"]


def test_uncommitted_transaction_counts_as_aborted():
    history = [send("producer-0:0", offset=0, txn="producer-0/txn-1")]  # no commit op
    assert len(aborted_reads(history, [read("producer-0:0", 0)])) == 1


def test_commit_outcome_unknown_is_neither_aborted_nor_lost():
    history = [
        send("producer-0:0", offset=0, txn="x"),
        txn_op("commit_txn", "x", "info"),
    ]
    assert aborted_reads(history, [read("producer-0:0", 0)]) == []
    assert lost(history, []) == []
    assert [f["value"] for f in unseen(history, [])] == ["producer-0:0"]


def test_aborted_reads_tie_records_to_sends_by_offset():
    # A pipeline redid an aborted transaction: the same value at offset 4 (aborted)
    # and at offset 8 (committed). Only the record at offset 4 is an aborted read.
    history = [
        send("producer-0:5", offset=4, txn="pipeline-0/txn-1", proc="pipeline-0"),
        txn_op("abort_txn", "pipeline-0/txn-1", proc="pipeline-0"),
        send("producer-0:5", offset=8, txn="pipeline-0/txn-2", proc="pipeline-0"),
        txn_op("commit_txn", "pipeline-0/txn-2", proc="pipeline-0"),
    ]
    assert [f["offset"] for f in aborted_reads(history, [read("producer-0:5", 4)])] == [4]
    assert aborted_reads(history, [read("producer-0:5", 8)]) == []


# --- reordered -----------------------------------------------------------------------


def test_reordered_fires_when_an_earlier_send_lands_later():
    reads = [read("producer-0:0", 0), read("producer-0:2", 1), read("producer-0:1", 2)]
    (finding,) = reordered(reads)
    assert finding == {
        "value": "producer-0:1",
        "topic": "t",
        "partition": 0,
        "offset": 2,
        "after": "producer-0:2",
        "after_offset": 1,
    }
    assert check([], reads).counts[REORDERED] == 1


def test_reordered_counts_each_late_value_once():
    reads = [read(f"producer-0:{s}", o) for o, s in enumerate([3, 0, 1, 2, 4])]
    assert [f["value"] for f in reordered(reads)] == [
        "producer-0:0",
        "producer-0:1",
        "producer-0:2",
    ]


def test_reordered_ignores_duplicates_and_other_producers_and_partitions():
    reads = [
        read("producer-0:0", 0),
        read("producer-1:5", 1),
        read("producer-0:1", 2),
        read("producer-0:0", 3),  # a retried copy: a duplicate, not a reordering
        read("producer-1:6", 4),
        read("producer-0:9", 0, partition=1),  # other partition, judged on its own
        read("producer-0:2", 1, partition=1),  # ... where this one *is* reordered
    ]
    assert [(f["partition"], f["value"]) for f in reordered(reads)] == [(1, "producer-0:2")]


def test_reordered_tells_a_late_first_copy_from_a_late_copy_of_a_stored_value():
    # 5 and 7 rise; 3 is late and new (reordered); the second 3 and 5 are late copies of
    # a late value and of a rise (duplicates); 6 is late and new; the second 7 equals the top.
    seqs = [5, 7, 3, 3, 5, 6, 7, 8, 2]
    reads = [read(f"producer-0:{s}", o) for o, s in enumerate(seqs)]
    assert [(f["value"], f["offset"], f["after"], f["after_offset"])
            for f in reordered(reads)] == [("producer-0:3", 2, "producer-0:7", 1),
                                           ("producer-0:6", 5, "producer-0:7", 1),
                                           ("producer-0:2", 8, "producer-0:8", 7)]


@pytest.mark.parametrize("seed", range(20))
def test_reordered_equals_the_one_before_on_dense_reorderings(seed):
    # Many producers, seqs shuffled in windows and re-stored: most values are late.
    rng = random.Random(seed)
    reads = []
    for partition in range(2):
        stored = [(f"p-{rng.randint(0, 3)}:{rng.choice([-1, 1]) * rng.randint(0, 25)}")
                  for _ in range(rng.randint(0, 80))]
        stored += rng.sample(stored, len(stored) // 3)  # copies, stored later
        for i in range(0, len(stored), 7):
            window = stored[i:i + 7]
            rng.shuffle(window)
            stored[i:i + 7] = window
        reads += [read(v, o, partition=partition) for o, v in enumerate(stored)]
    rng.shuffle(reads)
    assert reordered(reads) == Before.reordered(reads)


# --- unexpected ----------------------------------------------------------------------


def test_unexpected_fires_on_failed_send_found_in_log_and_on_unrecorded_values():
    history = [send("producer-0:0", "fail"), send("producer-0:1", offset=1)]
    reads = [
        read("producer-0:0", 0),
        read("producer-0:1", 1),
        read("producer-7:0", 2),  # no send of it anywhere
        read(None, 3),  # not a lab value: ignored
        read("producer-9:0", 0, topic="unrelated"),  # a topic the history never wrote
    ]
    found = unexpected(history, reads)
    assert [(f["value"], f["why"]) for f in found] == [
        ("producer-0:0", "every send failed"),
        ("producer-7:0", "never sent"),
    ]
    assert check(history, reads).counts[UNEXPECTED] == 2


def test_failed_then_acked_resend_is_not_unexpected():
    history = [send("producer-0:0", "fail"), send("producer-0:0", offset=0)]
    assert unexpected(history, [read("producer-0:0", 0)]) == []


# --- pipeline ------------------------------------------------------------------------


def pipeline_reads(out_values):
    inputs = [read(f"producer-0:{i}", i, topic="in") for i in range(3)]
    outputs = [read(v, o, topic="out") for o, v in enumerate(out_values)]
    return inputs, outputs


def test_pipeline_exactly_once_reports_missing_and_extra():
    inputs, outputs = pipeline_reads(["producer-0:0", "producer-0:2", "producer-0:2"])
    missing, extra = pipeline_exactly_once(inputs, outputs)
    assert missing == [{"value": "producer-0:1", "input_records": 1, "output_records": 0}]
    assert extra == [{"value": "producer-0:2", "input_records": 1, "output_records": 2}]


def test_pipeline_clean_and_input_duplicates_are_matched_by_count():
    inputs, outputs = pipeline_reads([f"producer-0:{i}" for i in range(3)])
    assert pipeline_exactly_once(inputs, outputs) == ([], [])
    # An input duplicate legitimately yields two output records.
    inputs.append(read("producer-0:1", 3, topic="in"))
    outputs.append(read("producer-0:1", 3, topic="out"))
    assert pipeline_exactly_once(inputs, outputs) == ([], [])


def test_pipeline_missing_counts_records_not_just_values():
    # producer-0:1 is in the input twice but in the output once: one record was dropped.
    inputs, outputs = pipeline_reads([f"producer-0:{i}" for i in range(3)])
    inputs.append(read("producer-0:1", 3, topic="in"))
    missing, extra = pipeline_exactly_once(inputs, outputs)
    assert missing == [{"value": "producer-0:1", "input_records": 2, "output_records": 1}]
    assert extra == []


def test_check_runs_pipeline_only_when_asked():
    inputs, outputs = pipeline_reads(["producer-0:0", "producer-0:2", "producer-0:2"])
    without = check([], inputs + outputs)
    assert PIPELINE_MISSING not in without.counts
    result = check([], inputs + outputs, pipeline=("in", "out"))
    assert result.counts[PIPELINE_MISSING] == 1
    assert result.counts[PIPELINE_EXTRA] == 1
    # producer-0:2 twice in "out" is judged as pipeline_extra only, so that a mode can
    # allow re-processing without allowing producer duplicates; without the pipeline
    # check it is a plain duplicate.
    assert result.violations() == [PIPELINE_MISSING, PIPELINE_EXTRA]
    assert without.counts[DUPLICATES] == 1


# --- check / Result ------------------------------------------------------------------


def test_allowed_anomalies_keep_the_result_valid():
    history, reads = clean()
    reads.append(read("producer-0:1", 3))
    allowed = check(history, reads, allowed={DUPLICATES})
    assert allowed.valid and allowed.violations() == []
    assert "allowed in this mode" in allowed.summary()
    forbidden = check(history, reads)
    assert not forbidden.valid and forbidden.violations() == [DUPLICATES]
    assert "INVALID (duplicates)" in forbidden.summary()
    assert "NOT allowed" in forbidden.summary()


def test_judged_by_other_rules_changes_the_verdict_not_the_findings():
    history, reads = clean()
    reads.append(read("producer-0:1", 3))
    lenient = check(history, reads, allowed={DUPLICATES})
    strict = lenient.judged_by(frozenset())
    assert lenient.valid and not strict.valid
    assert strict.violations() == [DUPLICATES] and strict.counts == lenient.counts
    assert strict.judged_by({DUPLICATES}).valid
    with pytest.raises(BadValue, match="allowed="):
        lenient.judged_by({"dupes"})


def test_check_rejects_unknown_anomaly_names():
    with pytest.raises(BadValue, match="allowed="):
        check([], [], allowed={"dupes"})


def test_examples_are_capped_and_counts_are_not():
    history = [send(f"producer-0:{i}", offset=i) for i in range(8)]
    result = check(history, [])
    assert result.counts[LOST] == 8
    assert len(result.examples[LOST]) == checker.EXAMPLES == 5
    assert "8 acknowledged values were never read" in result.summary()


def test_summary_stats_and_to_dict_are_json_ready():
    history, reads = clean()
    history += [send("producer-0:3", "info"), send("producer-0:4", "fail")]
    result = check(history, reads)
    assert result.stats == {
        "values_sent": 5,
        "acknowledged": 3,
        "indefinite": 1,
        "failed": 1,
        "records_read": 3,
    }
    data = json.loads(json.dumps(result.to_dict()))
    assert data["valid"] is True
    assert data["counts"][UNSEEN] == 1
    assert data["summary"].startswith("5 values were sent (3 acknowledged, 1 indefinite")


# --- reads_from_records --------------------------------------------------------------


class FakeRow:
    """Stands in for pyspark.sql.Row: only asDict() is used."""

    def __init__(self, **kw):
        self._kw = kw

    def asDict(self):  # noqa: N802 (Spark's name)
        return self._kw


def test_reads_from_records_accepts_the_shapes_a_reader_hands_back():
    reads = reads_from_records(
        [
            {"topic": "t", "partition": 0, "offset": 0, "value": "producer-0:0"},
            {"topic": "t", "partition": 0, "offset": 1, "value": encode("producer-0", 1, 8)},
            {"topic": "t", "partition": 0, "offset": 2, "producer": "producer-0", "seq": 2},
            {"topic": "t", "partition": 0, "offset": 3, "value": b"not a lab value"},
            FakeRow(topic="t", partition=1, offset=4, value="producer-1:0", isolation="ru"),
        ],
        reader="read_committed",
    )
    assert [r.value for r in reads] == [
        "producer-0:0",
        "producer-0:1",
        "producer-0:2",
        None,
        "producer-1:0",
    ]
    assert [r.reader for r in reads] == ["read_committed"] * 4 + ["ru"]
    assert reads[4] == Read("t", 1, 4, "producer-1:0", "ru")


def test_extra_copies_counts_every_copy_beyond_the_first():
    from deliverylab.checker import extra_copies

    assert extra_copies([]) == 0
    assert extra_copies(["a", "b", None, None]) == 0  # None: not a lab value
    assert extra_copies(["a", "a", "a", "b", "b"]) == 3
    assert extra_copies(["a", "a", "a", "b", "b"], only={"b"}) == 1


# --- the fast check equals the detectors as they were ---------------------------------
#
# Issue 41 rebuilt the detectors over shared indexes (a 1M-op check in seconds, not 23 s).
# The code below is the detectors as they were before (main at 818c28f), kept verbatim
# in substance as the reference: on every history here, old and new must give equal
# findings, in equal order, and equal errors.


class Before:
    """The detectors before issue 41: one pass per detector over ops and records."""

    RANK = {"acked": 3, "indefinite": 2, "aborted": 1, "failed": 0}

    @staticmethod
    def send_fate(op, fates):
        fate = fates.get(op.txn, "committed") if op.txn is not None else "committed"
        if fate == "aborted":
            return "aborted"
        if op.outcome == "ok":
            return "acked" if fate == "committed" else "indefinite"
        return "indefinite" if op.outcome == "info" else "failed"

    @classmethod
    def expectations(cls, history):
        ops = list(history)
        fates = txn_fates(ops)
        best = {}
        for op in (op for op in ops if op.kind == "send"):
            fate = cls.send_fate(op, fates)
            for value in op.values:
                key = (op.topic, value)
                if key not in best or cls.RANK[fate] > cls.RANK[best[key][0]]:
                    best[key] = (fate, op)
        return best

    @staticmethod
    def records(reads):
        return {(r.topic, r.partition, r.offset): r.value for r in reads if r.value is not None}

    @classmethod
    def missing(cls, history, reads, wanted):
        records = cls.records(reads)
        present = {(t, v) for (t, _, _), v in records.items()}
        present_values = {v for _, v in present}
        out = []
        for (topic, value), (fate, op) in cls.expectations(history).items():
            if fate != wanted:
                continue
            if (topic, value) in present or (topic is None and value in present_values):
                continue
            out.append({"value": value, "topic": topic, "partition": op.partition,
                        "offset": op.offset, "process": op.process, "txn": op.txn,
                        "error": op.error})
        return sorted(out, key=lambda f: (str(f["topic"]), parse_value(f["value"])))

    @classmethod
    def duplicates(cls, reads):
        places = defaultdict(set)
        for (topic, partition, offset), value in cls.records(reads).items():
            places[(topic, value)].add((partition, offset))
        out = [{"value": value, "topic": topic, "copies": len(ps),
                "offsets": sorted(map(list, ps))}
               for (topic, value), ps in places.items() if len(ps) > 1]
        return sorted(out, key=lambda f: (f["topic"], parse_value(f["value"])))

    @classmethod
    def aborted_reads(cls, history, reads):
        ops = list(history)
        fates = txn_fates(ops)
        at = {(op.topic, op.partition, op.offset): op for op in ops if op.kind == "send"
              and op.outcome == "ok" and len(op.values) == 1 and op.offset is not None}
        expected = cls.expectations(ops)
        out = []
        for (topic, partition, offset), value in cls.records(reads).items():
            op = at.get((topic, partition, offset))
            if op is not None and op.values[0] == value:
                aborted = cls.send_fate(op, fates) == "aborted"
            else:
                fate, op = (expected.get((topic, value)) or expected.get((None, value))
                            or ("", None))
                aborted = fate == "aborted"
            if aborted and op is not None:
                out.append({"value": value, "topic": topic, "partition": partition,
                            "offset": offset, "txn": op.txn})
        return sorted(out, key=lambda f: (f["topic"], f["partition"], f["offset"]))

    @classmethod
    def reordered(cls, reads):
        first = defaultdict(dict)
        for (topic, partition, offset), value in sorted(cls.records(reads).items()):
            vid = parse_value(value)
            first[(topic, partition, vid.producer)].setdefault(vid.seq, offset)
        out = []
        for (topic, partition, producer), seqs in first.items():
            top_seq, top_offset = None, None
            for seq, offset in sorted(seqs.items(), key=lambda item: item[1]):
                if top_seq is not None and seq < top_seq:
                    out.append({"value": str(ValueId(producer, seq)), "topic": topic,
                                "partition": partition, "offset": offset,
                                "after": str(ValueId(producer, top_seq)),
                                "after_offset": top_offset})
                elif top_seq is None or seq > top_seq:
                    top_seq, top_offset = seq, offset
        return sorted(out, key=lambda f: (f["topic"], f["partition"], f["offset"]))

    @classmethod
    def unexpected(cls, history, reads):
        ops = list(history)
        expected = cls.expectations(ops)
        written = {op.topic for op in ops if op.kind == "send" and op.topic is not None}
        out = []
        for (topic, partition, offset), value in cls.records(reads).items():
            fate, _ = expected.get((topic, value)) or expected.get((None, value)) or ("", None)
            if fate == "failed":
                why = "every send failed"
            elif not fate and topic in written:
                why = "never sent"
            else:
                continue
            out.append({"value": value, "topic": topic, "partition": partition,
                        "offset": offset, "why": why})
        return sorted(out, key=lambda f: (f["topic"], f["partition"], f["offset"]))

    @classmethod
    def check(cls, history, reads, allowed=frozenset(), pipeline=None):
        allowed = frozenset(allowed)
        ops, reads = list(history), list(reads)
        found = {
            LOST: cls.missing(ops, reads, "acked"),
            DUPLICATES: cls.duplicates([r for r in reads
                                        if pipeline is None or r.topic != pipeline[1]]),
            ABORTED_READS: cls.aborted_reads(ops, reads),
            REORDERED: cls.reordered(reads),
            UNEXPECTED: cls.unexpected(ops, reads),
            UNSEEN: cls.missing(ops, reads, "indefinite"),
        }
        if pipeline is not None:
            source, sink = pipeline
            found[PIPELINE_MISSING], found[PIPELINE_EXTRA] = pipeline_exactly_once(
                [r for r in reads if r.topic == source], [r for r in reads if r.topic == sink])
        counts = {a: len(found[a]) for a in checker.ANOMALIES if a in found}
        fates = [fate for fate, _ in cls.expectations(ops).values()]
        stats = {"values_sent": len(fates), "acknowledged": fates.count("acked"),
                 "indefinite": fates.count("indefinite"),
                 "failed": fates.count("failed") + fates.count("aborted"),
                 "records_read": len(cls.records(reads))}
        valid = all(not n or a in allowed or a in checker.INFORMATIONAL
                    for a, n in counts.items())
        return checker.Result(valid=valid, counts=counts,
                              examples={a: found[a][:checker.EXAMPLES] for a in counts},
                              allowed=allowed, stats=stats)


def outcome(fn, *args, **kwargs):
    """What a call gives: its value, or the type and message of what it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return (type(exc).__name__, str(exc))


def assert_same_as_before(history, reads, pipeline=None):
    """Every detector and check (under every mode's rules) equals the reference."""
    history, reads = list(history), list(reads)
    pairs = [(lost, lambda h, r: Before.missing(h, r, "acked"), True),
             (unseen, lambda h, r: Before.missing(h, r, "indefinite"), True),
             (aborted_reads, Before.aborted_reads, True), (unexpected, Before.unexpected, True),
             (duplicates, Before.duplicates, False), (reordered, Before.reordered, False)]
    for new, old, needs_history in pairs:
        args = (history, reads) if needs_history else (reads,)
        assert outcome(new, *args) == outcome(old, *args), new.__name__
    for rules in [frozenset(), *(m.allowed for m in MODES.values())]:
        got = outcome(check, history, reads, rules, pipeline)
        want = outcome(Before.check, history, reads, rules, pipeline)
        assert (got.to_dict() if isinstance(got, checker.Result) else got) == (
            want.to_dict() if isinstance(want, checker.Result) else want)


KINDS_BESIDE_SENDS = [Op("consumer-0", "poll", "ok", 0.1, ("producer-0:0",), "t", 0, 0),
                      Op("consumer-0", "commit", "fail", 0.2, error="REBALANCE_IN_PROGRESS"),
                      Op("producer-1", "init_txn", "ok", 0.3),
                      Op("producer-1", "begin_txn", "ok", 0.4, txn="producer-1/txn-1"),
                      Op("producer-1", "send_offsets", "info", 0.5, txn="producer-1/txn-1"),
                      Op("nemesis", "fault", "ok", 0.6, detail="paused", fault="pause_broker"),
                      Op("nemesis", "fault", "info", 0.7, fault="kill_broker"),
                      Op("service-0", "db_write", "ok", 0.8, ("producer-0:1",)),
                      Op("service-0", "http_call", "fail", 0.9, ("producer-0:1",))]


@pytest.mark.parametrize("case", [
    "clean", "lost", "unseen", "duplicates", "aborted", "reordered", "unexpected",
    "every_kind", "two_views", "place_rewritten", "resend_after_abort", "topicless",
    "multi_value", "odd_values", "same_sort_key", "unsorted_reads", "bad_value", "empty",
])
def test_fast_detectors_equal_the_ones_before_on_hand_written_histories(case):
    h, r = clean()
    if case == "lost":
        h += [send("producer-0:3", offset=3), send("producer-0:4", offset=4, topic="u")]
    elif case == "unseen":
        h += [send("producer-0:3", "info", error="_MSG_TIMED_OUT"), send("producer-0:4", "info")]
        r += [read("producer-0:4", 3)]
    elif case == "duplicates":
        r += [read("producer-0:1", 3), read("producer-0:1", 7, partition=1),
              read("producer-0:0", 4), read("producer-0:0", 9, topic="out")]
    elif case == "aborted":
        h = txn_history() + [send("producer-0:2", offset=5, txn="x"),
                             txn_op("commit_txn", "x", "info")]
        r = [read("producer-0:0", 0, reader="read_uncommitted"), read("producer-0:1", 2),
             read("producer-0:2", 5)]
    elif case == "reordered":
        r = [read("producer-0:0", 0), read("producer-0:2", 1), read("producer-0:1", 2),
             read("producer-0:2", 3), read("producer-1:5", 4), read("producer-1:3", 5)]
        h += [send("producer-1:5", offset=4, proc="producer-1"),
              send("producer-1:3", offset=5, proc="producer-1")]
    elif case == "unexpected":
        h += [send("producer-0:3", "fail", error="NOT_ENOUGH_REPLICAS")]
        r += [read("producer-0:3", 3), read("ghost:1", 4), read("ghost:2", 0, topic="elsewhere")]
    elif case == "every_kind":
        h = KINDS_BESIDE_SENDS + h + [send("producer-0:5", "fail"), send("producer-0:6", "info")]
    elif case == "two_views":
        r += [read("producer-0:1", 1, reader="read_uncommitted")]
    elif case == "place_rewritten":  # one place read with two values: the last one counts
        h = txn_history() + [send("producer-0:9", offset=0)]
        r = [read("producer-0:9", 0), read("producer-0:0", 0), read("producer-0:1", 2)]
    elif case == "resend_after_abort":
        h = [send("producer-0:5", offset=4, txn="p/1", proc="pipeline-0"),
             txn_op("abort_txn", "p/1", proc="pipeline-0"),
             send("producer-0:5", offset=8, txn="p/2", proc="pipeline-0"),
             txn_op("commit_txn", "p/2", proc="pipeline-0"),
             send("producer-0:5", offset=4, proc="late")]  # a later send at the same place
        r = [read("producer-0:5", 4), read("producer-0:5", 8)]
    elif case == "topicless":
        h += [send("producer-0:7", topic=None), send("producer-0:8", topic=None),
              send("producer-0:8", topic="None", offset=1), send("producer-0:7", "info", topic="u")]
        r += [read("producer-0:7", 0, topic="elsewhere")]
    elif case == "multi_value":
        h += [Op("producer-0", "send", "ok", 0.0, ("producer-0:3", "producer-0:4"), "t", 0, 3),
              Op("producer-0", "send", "info", 0.0, (), "t")]
        r += [read("producer-0:4", 3)]
    elif case == "odd_values":  # as a hand-built Read may hold them
        r += [read("producer-0:07", 5), read("producer-0:7", 6), read("a:b:-3", 7),
              read("a:b:-5", 8), read(None, 9), read(ValueId("producer-0", 2), 10)]
    elif case == "same_sort_key":
        # p:7 is first read first, p:07 first stored twice: the first reading decides.
        r = [read("p:7", 1), read("p:07", 2, partition=1), read("p:07", 3, partition=1),
             read("p:007", 3), read("p:7", 4), read("p:007", 5)]
        h = [send("p:1", topic=None), send("p:1", topic="None")]
    elif case == "unsorted_reads":
        r = list(reversed(r)) + [read("producer-0:9", 1, partition=2),
                                 read("producer-0:8", 0, partition=2)]
    elif case == "bad_value":
        r += [read("producer-0:x", 4), read("not a value", 5), read("producer-0:x", 6)]
    elif case == "empty":
        h, r = [], []
    assert_same_as_before(h, r)
    assert_same_as_before(h, r, pipeline=("t", "out"))


@pytest.mark.parametrize("seed", range(30))
def test_fast_check_equals_the_one_before_when_most_values_are_at_their_place(seed):
    # As a broker writes them: each send at the next offset of its partition and most read
    # back there; then records elsewhere (rewriting a place, or in another partition),
    # later copies, sends without a place or a topic, and records never sent.
    rng = random.Random(seed)
    history, reads, ends = [], [], {}
    for i in range(rng.randint(0, 150)):
        value = f"producer-{rng.randint(0, 2)}:{rng.randint(0, 80)}"
        topic, partition = rng.choice(["in", "out"]), rng.randint(0, 2)
        offset = ends[topic, partition] = ends.get((topic, partition), -1) + 1
        history.append(Op("producer-0", "send", rng.choice(["ok"] * 6 + ["info", "fail"]),
                          float(i), (value,), rng.choice([topic] * 9 + [None]), partition,
                          offset if rng.random() < 0.9 else None,
                          rng.choice([None] * 4 + ["a", "b"])))
        roll = rng.random()
        if roll < 0.8:
            reads.append(read(value, offset, topic=topic, partition=partition))
        elif roll < 0.9:
            reads.append(read(value, rng.randint(0, 40), topic=topic,
                              partition=rng.randint(0, 2)))
        if rng.random() < 0.1:
            reads.append(read(value, 100 + i, topic=rng.choice(["in", "out"]),
                              partition=partition))
    reads += [read(f"ghost:{i}", 200 + i, topic="in") for i in range(rng.randint(0, 3))]
    for txn in "ab":
        if rng.random() < 0.8:
            history.append(txn_op(rng.choice(["commit_txn", "abort_txn"]), txn,
                                  rng.choice(["ok", "info"])))
    if rng.random() < 0.3:
        rng.shuffle(reads)
    assert_same_as_before(history, reads)
    assert_same_as_before(history, reads, pipeline=("in", "out"))


@pytest.mark.parametrize("seed", range(40))
def test_fast_check_equals_the_one_before_on_random_histories(seed):
    rng = random.Random(seed)
    topics, history, reads = ["in", "out", None], [], []
    for i in range(rng.randint(0, 60)):
        txn = rng.choice([None, None, "a", "b", "c", "d"])
        value = f"producer-{rng.randint(0, 2)}:{rng.randint(0, 30)}"
        topic = rng.choice(topics)
        offset = rng.choice([None, rng.randint(0, 20)])
        history.append(Op("producer-0", rng.choice(["send", "send", "send", "poll"]),
                          rng.choice(["ok", "ok", "info", "fail"]), float(i), (value,), topic,
                          rng.randint(0, 1), offset, txn))
        if rng.random() < 0.6:
            reads.append(read(value, rng.choice([offset, rng.randint(0, 20)]) or 0,
                              topic=rng.choice(["in", "out"]), partition=rng.randint(0, 1)))
    for txn in "abcd":
        if rng.random() < 0.7:
            history.append(txn_op(rng.choice(["commit_txn", "abort_txn"]), txn,
                                  rng.choice(["ok", "info", "fail"])))
    rng.shuffle(reads)
    assert_same_as_before(history, reads)
    assert_same_as_before(history, reads, pipeline=("in", "out"))
