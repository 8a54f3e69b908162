"""The runner's pure parts: the uneven input, each run's state from how its processes
ended, the verdicts each state allows, and how the report shows runs not judged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from deliverylab.grade import exercise
from deliverylab.grade.child import RAISED as RAISED_EXIT
from deliverylab.grade.exercises import (
    BROKEN,
    HUNG,
    JUDGED,
    RAISED,
    TIMEOUT,
    UNPLACED,
)
from deliverylab.grade.report import Report
from deliverylab.grade.runner import (
    Run,
    input_sizes,
    judge_state,
    stage_plan,
    uneven_sizes,
)
from deliverylab.grade.search import CrashPoint, redo_beyond, redo_bound

EX = exercise("02")
PLAN = stage_plan(EX, "crash_consumer", CrashPoint("flush", 2))


def test_the_input_is_uneven_so_that_batches_span_partitions():
    assert uneven_sizes(60) == [6, 21, 33]
    assert sum(uneven_sizes(40)) == 40
    ends = [6, 6 + 21]
    assert all(s % EX.batch for s in [*uneven_sizes(60), *ends])  # no batch ends there
    assert input_sizes(exercise("06")) == [6, 21, 33]  # the handler keeps the uneven 3


@pytest.mark.parametrize("ex_id", ["02", "04"])
def test_the_loops_partitions_are_each_smaller_than_a_batch_and_uneven(ex_id):
    ex = exercise(ex_id)
    sizes = input_sizes(ex)
    assert sum(sizes) == ex.values and max(sizes) < ex.batch and ex.full_batches
    assert len(set(sizes)) > 1
    assert input_sizes(ex) == input_sizes(EX)  # one layout, named once
    from deliverylab.grade.exercises import Exercise

    with pytest.raises(ValueError, match="fewer than 10 values each"):
        Exercise(id="x", name="x", chapter="x", function="f", faults=("none",),
                 properties=(), input_sizes=(10, 50), full_batches=True)


def orders(sizes: list[int], trials: int = 300):
    """Orders librdkafka may queue the input in: each partition's messages in offset
    order, partitions handed over whole in any order (as one fetch does) or interleaved
    message by message at random (several fetches), seeded."""
    import random

    rng = random.Random(42)
    for _ in range(trials):
        whole = list(range(len(sizes)))
        rng.shuffle(whole)
        yield [(p, o) for p in whole for o in range(sizes[p])]
        left = [p for p, n in enumerate(sizes) for _ in range(n)]
        rng.shuffle(left)
        seen = [0] * len(sizes)
        mixed = []
        for p in left:
            mixed.append((p, seen[p]))
            seen[p] += 1
        yield mixed


def first_commit_redo(order: list[tuple[int, int]], commit_last_only: bool) -> list[str]:
    """Killed right after the first commit: the values the successor redoes beyond the
    exact bound. The loop got a full first batch (full_batches) and committed either
    its last message's partition only, or every partition the batch touched."""
    batch = order[:EX.batch]
    events = [{"t": i, "process": "stage-0", "kind": "poll", "topic": "in",
               "partition": p, "offset": o, "values": [f"p{p}-{o}"]}
              for i, (p, o) in enumerate(batch)]
    events.append({"t": len(batch), "process": "stage-0", "kind": "commit"})
    covered = {p: o + 1 for p, o in batch}
    if commit_last_only:
        covered = {batch[-1][0]: batch[-1][1] + 1}
    redone = [f"p{p}-{o}" for p, o in batch if o >= covered.get(p, 0)]
    return redo_beyond(redone, redo_bound(events, "stage-0").allowed)


def test_every_batch_spans_partitions_so_a_last_partition_commit_is_caught_by_construction():
    """Whatever order the fetches queue the input in, a full batch of 10 holds two
    partitions (none holds 10), so committing the last message's partition only leaves
    another behind, and the kill after the first commit (commit#1, every seed) shows
    its values redone beyond the bound; a commit of every partition shows none. With
    the old input (3 partitions of 6, 21, 33) a fetch that queued the 33 first gave
    single-partition batches: missed."""
    sizes = input_sizes(EX)
    for order in orders(sizes):
        assert len({p for p, _ in order[:EX.batch]}) >= 2
        assert len({p for p, _ in order[EX.batch:2 * EX.batch]}) >= 2  # 04's too: same
        assert first_commit_redo(order, commit_last_only=True)
        assert first_commit_redo(order, commit_last_only=False) == []
    old = [(2, o) for o in range(33)] + [(0, o) for o in range(6)]
    assert first_commit_redo(old, commit_last_only=True) == []


def test_the_plan_names_the_point_the_calls_counted_and_the_fault():
    assert PLAN == {"point": "flush#2", "cycle": ["poll", "flush", "commit"],
                    "fault": "crash_consumer", "optional": []}
    assert stage_plan(EX, "none", None) == {}


def e(process: str, kind: str, **kw) -> dict:
    return {"t": 0.0, "process": process, "kind": kind, **kw}


def test_a_killed_stage_and_its_successor_that_finished_are_judged():
    endings = [("stage-0", "killed", ""), ("stage-1", "done", "")]
    assert judge_state([], endings, PLAN) == (JUDGED, "")


def test_code_that_raised_is_the_students_with_its_traceback():
    tb = "Traceback (your code):\n  File mine.py, line 3\nKeyError: 'x'"
    events = [e("stage-0", "raised", detail=tb)]
    assert judge_state(events, [("stage-0", "raised", "")], PLAN) == (RAISED, tb)


def test_a_run_out_of_time_is_not_judged_unless_the_loop_ignored_running():
    slow = judge_state([], [("stage-0", "timeout", "killed")], {})
    assert slow[0] == TIMEOUT and slow[1].startswith("not judged: stage-0 did not get")
    hung = judge_state([e("stage-0", "stopped")], [("stage-0", "timeout", "")], {})
    assert hung[0] == HUNG and "running() was False" in hung[1]
    # the child's own deadline ended the loop: partial output, not judged either
    assert judge_state([e("stage-0", "deadline")], [("stage-0", "done", "")], {})[0] == TIMEOUT


def test_a_crash_the_run_never_reached_is_the_graders_problem():
    events = [e("stage-0", "end", counts={"poll": 6, "flush": 1, "commit": 1})]
    state, reason = judge_state(events, [("stage-0", "done", "")], PLAN)
    assert state == UNPLACED
    assert reason == ("not judged: the grader could not place its crash after your 2nd "
                      "flush: your run made 1 flush call")


def test_a_call_a_correct_loop_never_makes_is_no_crash_point_of_theirs():
    """04: a loop that sends its offsets in the transaction never commits them itself;
    the kill planned after its 1st offset commit never comes, and the run is judged as
    it ran. A loop that commits once, then no more, is still the grader's problem."""
    plan = stage_plan(exercise("04"), "crash_consumer", CrashPoint("commit", 1))
    never = [e("stage-0", "end", counts={"poll": 6, "commit_transaction": 6})]
    assert judge_state(never, [("stage-0", "done", "")], plan) == (JUDGED, "")
    plan2 = stage_plan(exercise("04"), "crash_consumer", CrashPoint("commit", 2))
    once = [e("stage-0", "end", counts={"poll": 6, "commit": 1})]
    assert judge_state(once, [("stage-0", "done", "")], plan2)[0] == UNPLACED
    # 02's commit is no optional call: a loop that never commits is not judged there
    never02 = [e("stage-0", "end", counts={"poll": 6, "flush": 6})]
    plan02 = stage_plan(EX, "crash_consumer", CrashPoint("commit", 1))
    assert judge_state(never02, [("stage-0", "done", "")], plan02)[0] == UNPLACED


def test_a_grader_failure_or_an_unplanned_kill_is_not_judged():
    assert judge_state([], [("stage-0", "error", "Traceback...")], {})[0] == BROKEN
    assert judge_state([], [("stage-0", "killed", "")], {})[0] == BROKEN


def test_verdicts_judge_nothing_the_run_cannot_show():
    counts = {"pipeline_missing": 3}
    assert EX.verdicts("crash_consumer", counts, JUDGED) == {
        "nothing_lost": False, "one_batch_redone": True, "finishes": True}
    for state in (RAISED, HUNG):
        assert EX.verdicts("crash_consumer", counts, state) == {
            "nothing_lost": None, "one_batch_redone": None, "finishes": False}
    for state in (TIMEOUT, UNPLACED, BROKEN):
        assert set(EX.verdicts("crash_consumer", counts, state).values()) == {None}


def run(point: str, state: str, reason: str = "", counts=None) -> Run:
    c = counts or {}
    return Run("02", "crash_consumer", 1, c, EX.verdicts("crash_consumer", c, state),
               point=point, state=state, reason=reason)


def test_the_report_never_counts_a_run_not_judged_as_a_pass(tmp_path: Path):
    sol = tmp_path / "mine.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    runs = [run("poll#1", JUDGED), run("flush#1", TIMEOUT, "not judged: slow host")]
    report = Report(EX, sol, runs)
    assert report.cell("crash_consumer", "nothing_lost").state == "not judged"
    assert report.failed == 0 and report.not_judged == 3 and not report.ok
    text = str(report)
    assert "1/2 not judged" in text
    assert "NOT JUDGED crash_consumer x nothing_lost:" in text
    assert "seed 1, flush#1: not judged: slow host" in text
    assert text.splitlines()[-1] == "0 passed, 0 failed, 3 not judged"


def test_code_that_raised_tops_the_report_and_fails_finishes_only(tmp_path: Path):
    sol = tmp_path / "mine.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    tb = "Traceback (your code):\n  File mine.py, line 3\nKeyError: 'x'"
    report = Report(EX, sol, [run("poll#1", JUDGED), run("flush#1", RAISED, tb)])
    text = str(report)
    assert text.index("YOUR CODE RAISED") < text.index("fault ")  # above the table
    assert "KeyError: 'x'" in text
    assert report.cell("crash_consumer", "finishes").state == "FAIL"
    assert report.cell("crash_consumer", "nothing_lost").state == "not judged"
    fail = report.failures()[0]
    assert fail["property"] == "finishes" and "commit" not in fail["hint"]
    assert fail["replay"].endswith("--fault crash_consumer --seed 1 --point 'flush#1'")


def test_a_failing_report_names_the_crash_point_in_the_students_words(tmp_path: Path):
    sol = tmp_path / "mine.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    bad = run("flush#2", JUDGED, counts={"pipeline_extra": 20})
    bad.crash = "after your 2nd flush, before your 1st offset commit"
    text = str(Report(EX, sol, [run("poll#1", JUDGED), bad]))
    assert "killed after your 2nd flush, before your 1st offset commit (seed 1)" in text
    assert "runs failing: seed 1, flush#2" in text


def test_under_a_live_fault_a_first_process_that_raised_hands_over_to_its_successor():
    tb = "Traceback (your code):\nRuntimeError: output not confirmed"
    events = [e("stage-0", "raised", detail=tb)]
    endings = [("stage-0", "raised", ""), ("stage-1", "done", "")]
    assert judge_state(events, endings, {}, live=True) == (JUDGED, "")
    assert judge_state(events, endings, {})[0] == RAISED  # no live fault: the student's
    # the successor raising too is the student's error
    events.append(e("stage-1", "raised", detail=tb))
    both = [("stage-0", "raised", ""), ("stage-1", "raised", "")]
    assert judge_state(events, both, {}, live=True)[0] == RAISED
    assert EX.live_faults == ("hold_request",) and "hold_request" in EX.faults


def test_a_raise_is_the_answer_to_02s_failed_write_but_not_to_04s_abortable_error():
    """02: a write that failed for good is answered by raising (uncommitted), and the
    successor's run is judged. 04: an abortable transaction error is the loop's to
    answer (abort, rewind, go on); a raise fails finishes, and its successor only
    fences the open transaction so that the output reads back."""
    ex04 = exercise("04")
    assert EX.hands_over("hold_request") and not EX.hands_over("crash_consumer")
    assert "hold_request" in ex04.faults and ex04.live_faults == ("hold_request",)
    assert not ex04.hands_over("hold_request")
    tb = "Traceback (your code):\nKafkaException: KafkaError{code=_MSG_TIMED_OUT}"
    events = [e("stage-0", "raised", detail=tb)]
    endings = [("stage-0", "raised", ""), ("stage-1", "done", "")]
    assert judge_state(events, endings, {}, live=EX.hands_over("hold_request"))[0] == JUDGED
    assert judge_state(events, endings, {}, live=ex04.hands_over("hold_request")) == (
        RAISED, tb)


def test_04s_producer_settings_are_ones_librdkafka_accepts_and_time_out_in_seconds():
    """The live fault resolves in seconds only if a held write times out in seconds; and
    librdkafka refuses a transactional producer whose message.timeout.ms exceeds its
    transaction.timeout.ms (checked here on the real library, no broker needed)."""
    from confluent_kafka import KafkaException, Producer

    from deliverylab.clients import config
    from deliverylab.modes import TRANSACTIONAL

    ex04 = exercise("04")
    conf = config("127.0.0.1:1", **{**TRANSACTIONAL.producer, **ex04.settings,
                                    "transactional.id": "unit"})
    assert conf["message.timeout.ms"] <= 5000 and conf["request.timeout.ms"] <= 5000
    Producer(conf)  # accepted (nothing connects before init_transactions)
    with pytest.raises(KafkaException, match="transaction.timeout.ms"):
        Producer({**conf, "message.timeout.ms": conf["transaction.timeout.ms"] + 1})


def test_a_spark_driver_killed_by_its_plan_hands_over_and_a_crash_query_driver_finishes():
    spark_plan = {"crash": "kill_driver", "crash_at": 1}
    killed = [("driver-0", "killed", ""), ("driver-1", "done", "")]
    assert judge_state([], killed, spark_plan, 240) == (JUDGED, "")
    assert judge_state([], [("driver-0", "done", "")], spark_plan, 240) == (JUDGED, "")
    slow = judge_state([], [("driver-0", "timeout", "")], spark_plan, 240)
    assert slow[0] == TIMEOUT and "in 240 s" in slow[1]


class FakeCluster:
    brokers = 1

    def __init__(self):
        self.created: list[str] = []
        self.deleted: list[str] = []

    def create_topic(self, name, partitions, config=None):
        self.created.append(name)

    def delete_topics(self, names):
        self.deleted += names


class FakeNemesis:
    def __init__(self, cluster, history=None):
        pass

    def heal(self):
        pass


def script(stage_events: list[dict], endings: list[tuple[str, str]]):
    """A Stage stand-in whose processes end as scripted and whose events are given."""
    import time as _time

    class FakeStage:
        client_id = "student"

        def __init__(self, *args):
            self.started = []
            self.names = {"in": args[3], "out": args[4]}  # the run's fresh topics

        def run(self, process, plan):
            self.started.append((process, plan))
            return endings[len(self.started) - 1]

        def read_events(self):
            now = _time.monotonic()
            return [{**ev, "t": now - 5 + i * 0.01,
                     **({"topic": self.names[ev["topic"]]} if "topic" in ev else {}),
                     **({"detail": ev["detail"].replace("in/", self.names["in"] + "/")}
                        if ev["kind"] == "store_offsets" else {})}
                    for i, ev in enumerate(stage_events)]

        def close(self):
            pass

    return FakeStage


def wired(monkeypatch, stage_events, endings, output: list[str]):
    """run_once with its cluster, processes and read-back stood in: the plumbing from
    events to verdicts runs for real (History, Checker, redo bound, run state)."""
    from deliverylab.grade import runner
    from deliverylab.history import Read

    values = [f"producer-0:{i}" for i in range(4)]

    def write_input(cluster, topic, sizes, history, process="producer-0", arm=None):
        for i, v in enumerate(values):
            history.record("producer-0", "send", "ok", [v], topic=topic, partition=0,
                           offset=i)
        return arm() if arm is not None else None

    def read_back(cluster, topics, isolation):
        src, sink = topics
        return ([Read(src, 0, i, v) for i, v in enumerate(values)]
                + [Read(sink, 0, i, v) for i, v in enumerate(output)])

    monkeypatch.setattr(runner, "write_input", write_input)
    monkeypatch.setattr(runner, "Nemesis", FakeNemesis)
    monkeypatch.setattr(runner, "Stage", script(stage_events, endings))
    monkeypatch.setattr(runner, "read_back", read_back)

    def unasked(cluster, group, topic):
        raise AssertionError("the group's offsets are read only after a store")

    monkeypatch.setattr(runner, "committed_at_kill", unasked)
    return runner


def poll(process, value, offset):
    return {"process": process, "kind": "poll", "values": [value], "topic": "in",
            "partition": 0, "offset": offset}


def send(process, value):
    return {"process": process, "kind": "send", "outcome": "ok", "values": [value],
            "topic": "out"}


def test_run_once_judges_an_off_by_one_commit_by_the_exact_bound(monkeypatch, tmp_path):
    v = [f"producer-0:{i}" for i in range(4)]
    events = [poll("stage-0", v[0], 0), poll("stage-0", v[1], 1), send("stage-0", v[0]),
              send("stage-0", v[1]),
              {"process": "stage-0", "kind": "commit", "outcome": "ok", "detail": "in/0@1"},
              {"process": "stage-0", "kind": "fault", "fault": "crash_consumer",
               "outcome": "info", "words": "after your 1st offset commit, before your 2nd "
               "poll", "detail": "stage-0 is SIGKILLed after your 1st offset commit"},
              poll("stage-1", v[1], 1), poll("stage-1", v[2], 2), poll("stage-1", v[3], 3),
              send("stage-1", v[1]), send("stage-1", v[2]), send("stage-1", v[3])]
    runner = wired(monkeypatch, events, [("killed", ""), ("done", "")],
                   [v[0], v[1], v[1], v[2], v[3]])
    sol = tmp_path / "s.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    cluster = FakeCluster()
    run = runner.run_once(EX, sol, "crash_consumer", 1, cluster, CrashPoint("commit", 1))
    assert run.state == JUDGED and run.point == "commit#1"
    assert cluster.deleted == cluster.created == list(run.topics)  # scratch, read back
    assert run.crash == "after your 1st offset commit, before your 2nd poll"
    assert run.counts["redo_beyond"] == 1 and run.counts["pipeline_extra"] == 1
    assert run.passed == {"nothing_lost": True, "one_batch_redone": False, "finishes": True}
    assert run.examples["pipeline_extra"] == [{"value": v[1]}]


def stored_run() -> tuple[list[str], list[dict]]:
    """store_offsets + auto-commit, killed on its 1st commit report: v0 and v1 written
    and stored each, the timer's report of the first store served during the 3rd
    consume(), the kill; the successor redoes v1 (stored, not yet committed) and v2."""
    v = [f"producer-0:{i}" for i in range(4)]
    return v, [
        poll("stage-0", v[0], 0), send("stage-0", v[0]),
        {"process": "stage-0", "kind": "store_offsets", "outcome": "ok", "detail": "in/0@1"},
        poll("stage-0", v[1], 1), send("stage-0", v[1]),
        {"process": "stage-0", "kind": "store_offsets", "outcome": "ok", "detail": "in/0@2"},
        poll("stage-0", v[2], 2), send("stage-0", v[2]),
        {"process": "stage-0", "kind": "commit", "outcome": "ok", "how": "auto",
         "detail": "in/0@1"},
        {"process": "stage-0", "kind": "fault", "fault": "crash_consumer",
         "outcome": "info", "words": "after your 1st offset commit",
         "detail": "stage-0 is SIGKILLed after your 1st offset commit"},
        *(poll("stage-1", x, i) for i, x in enumerate(v) if i),
        *(send("stage-1", x) for x in v[1:])]


def test_run_once_excuses_a_redo_by_the_groups_offsets_read_after_the_kill(monkeypatch,
                                                                         tmp_path):
    v, events = stored_run()
    runner = wired(monkeypatch, events, [("killed", ""), ("done", "")],
                   [v[0], v[1], v[2], v[1], v[2], v[3]])
    asked = []

    def committed(cluster, group, topic):
        asked.append(topic)
        return {(topic, 0): 1}

    monkeypatch.setattr(runner, "committed_at_kill", committed)
    sol = tmp_path / "s.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    run = runner.run_once(EX, sol, "crash_consumer", 1, FakeCluster(), CrashPoint("commit", 1))
    assert len(asked) == 1 and asked[0].startswith("in-")  # once, on the run's input
    assert run.counts["pipeline_extra"] == 2 and run.counts["redo_beyond"] == 0
    assert run.counts["redo_owed"] == 1 and run.ok
    assert run.plan["committed_at_kill"] == f"{asked[0]}/0@1"
    # had the group committed the second store, v1's redo would be beyond the bound
    monkeypatch.setattr(runner, "committed_at_kill", lambda c, g, t: {(t, 0): 2})
    run = runner.run_once(EX, sol, "crash_consumer", 1, FakeCluster(), CrashPoint("commit", 1))
    assert run.counts["redo_beyond"] == 1 and run.passed["one_batch_redone"] is False


def test_run_once_does_not_judge_a_store_whose_fate_it_could_not_read(monkeypatch,
                                                                     tmp_path):
    from confluent_kafka import KafkaException

    v, events = stored_run()
    runner = wired(monkeypatch, events, [("killed", ""), ("done", "")],
                   [v[0], v[1], v[2], v[1], v[2], v[3]])

    def unreachable(cluster, group, topic):
        raise KafkaException("coordinator not available")

    monkeypatch.setattr(runner, "committed_at_kill", unreachable)
    sol = tmp_path / "s.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    run = runner.run_once(EX, sol, "crash_consumer", 1, FakeCluster(), CrashPoint("commit", 1))
    assert run.state == BROKEN and set(run.passed.values()) == {None}
    assert "committed offsets could not be read" in run.reason


def test_run_once_does_not_judge_a_crash_it_could_not_place(monkeypatch, tmp_path):
    v = [f"producer-0:{i}" for i in range(4)]
    events = [*(poll("stage-0", x, i) for i, x in enumerate(v)),
              *(send("stage-0", x) for x in v),
              {"process": "stage-0", "kind": "end", "counts": {"poll": 1, "flush": 1,
                                                               "commit": 0}}]
    runner = wired(monkeypatch, events, [("done", "")], v)
    sol = tmp_path / "s.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    run = runner.run_once(EX, sol, "crash_consumer", 1, FakeCluster(), CrashPoint("commit", 1))
    assert run.state == UNPLACED and set(run.passed.values()) == {None}
    assert "your run made 0 offset commit calls" in run.reason


def test_run_once_hands_a_raise_on_the_live_fault_to_a_successor(monkeypatch, tmp_path):
    import types

    v = [f"producer-0:{i}" for i in range(4)]
    tb = "Traceback (your code):\nRuntimeError: output not confirmed"
    events = [poll("stage-0", v[0], 0), {"process": "stage-0", "kind": "raised",
                                          "detail": tb},
              *(poll("stage-1", x, i) for i, x in enumerate(v)),
              *(send("stage-1", x) for x in v)]
    runner = wired(monkeypatch, events, [("raised", ""), ("done", "")], v)
    held = types.SimpleNamespace(handle=types.SimpleNamespace(held=["a request"]))
    monkeypatch.setattr(FakeNemesis, "hold_request", lambda self, **kw: held, raising=False)
    sol = tmp_path / "s.py"
    sol.write_text("def consume_loop(c, p, o, r): pass\n")
    run = runner.run_once(EX, sol, "hold_request", 1, FakeCluster())
    assert run.state == JUDGED and run.ok
    # the same raise with no live fault is the student's error, on top of the report
    runner = wired(monkeypatch, events[:2], [("raised", "")], v)
    run = runner.run_once(EX, sol, "none", 1, FakeCluster())
    assert run.state == RAISED and run.errors[0] == tb
    assert run.passed == {"nothing_lost": None, "one_batch_redone": None, "finishes": False}


def test_run_once_fails_finishes_when_04s_loop_raises_on_the_abortable_error(monkeypatch,
                                                                            tmp_path):
    """04 under hold_request: stage-0 raised on the abortable error, stage-1 (started to
    fence the open transaction) copied everything. The raise is the student's: finishes
    fails, nothing else is judged, and the hint names the abortable error."""
    import types

    v = [f"producer-0:{i}" for i in range(4)]
    tb = ("Traceback (your code):\nKafkaException: KafkaError{code=_MSG_TIMED_OUT,"
          "txn_requires_abort=True}")
    events = [poll("stage-0", v[0], 0), {"process": "stage-0", "kind": "raised",
                                          "detail": tb},
              *(poll("stage-1", x, i) for i, x in enumerate(v)),
              *(send("stage-1", x) for x in v)]
    runner = wired(monkeypatch, events, [("raised", ""), ("done", "")], v)
    held = types.SimpleNamespace(handle=types.SimpleNamespace(held=["a request"]))
    monkeypatch.setattr(FakeNemesis, "hold_request", lambda self, **kw: held, raising=False)

    monkeypatch.setattr(runner, "TxnProducer", NoAbortedInput)
    ex04 = exercise("04")
    sol = tmp_path / "s.py"
    sol.write_text("def transaction_loop(c, p, o, r): pass\n")
    run = runner.run_once(ex04, sol, "hold_request", 1, FakeCluster())
    assert run.state == RAISED and run.errors[0] == tb
    assert run.passed == {"nothing_lost": None, "exactly_once": None, "finishes": False}
    fail = Report(ex04, sol, [run]).failures()[0]
    assert fail["property"] == "finishes" and "txn_requires_abort()" in fail["hint"]


def test_the_stalled_instance_resumes_once_its_successor_handled_or_waits_on_its_lock():
    from deliverylab.grade.runner import HANDOFF_GRACE, handed_over

    m = "producer-0:0"
    polled = {"process": "stage-1", "kind": "poll", "values": [m], "t": 100.0}
    handled = {"process": "stage-1", "kind": "handled", "message": m, "t": 100.1}
    assert handed_over([], m, cap_at=120, now=101) == ""  # the successor has not got it
    assert handed_over([polled], m, cap_at=120, now=100.5) == ""
    assert handed_over([polled, handled], m, cap_at=120, now=100.2) == "handled"
    # polled and not handled for the grace: it waits on the stalled one's lock
    assert handed_over([polled], m, cap_at=120, now=100 + HANDOFF_GRACE) == "locked"
    # the stalled one's own events, or another message's, say nothing
    other = [{**polled, "process": "stage-0"}, {**handled, "message": "producer-0:1"}]
    assert handed_over(other, m, cap_at=120, now=110) == ""
    assert handed_over(other, m, cap_at=120, now=120) == "cap"


def test_the_stalled_instance_resumes_when_its_successor_waits_in_any_call_of_the_students():
    """A successor whose first batch came from another partition waits on the stalled
    one's write lock (BEGIN IMMEDIATE) in its handler on *that* message, or in its
    setup: it never polls the stalled message until the stalled one resumes."""
    from deliverylab.grade.runner import HANDOFF_GRACE, handed_over, in_call_since

    m = "producer-0:0"  # the stalled message, on partition 0

    def ev(kind, t, **f):
        return {"process": "stage-1", "kind": kind, "t": t, **f}

    first = ev("poll", 100.0, values=["producer-1:0"])  # partition 1's message first
    done = ev("handled", 100.1, message="producer-1:0")
    assert in_call_since([first]) == 100.0
    assert handed_over([first], m, cap_at=120, now=100 + HANDOFF_GRACE - 0.1) == ""
    assert handed_over([first], m, cap_at=120, now=100 + HANDOFF_GRACE) == "locked"
    # handled in time, and back in consume(): in no call of the student's
    assert in_call_since([first, done]) is None
    assert handed_over([first, done], m, cap_at=120, now=110) == ""
    # the next message's call is open: timed from its own poll
    second = ev("poll", 105.0, values=["producer-1:1"])
    assert in_call_since([first, done, second]) == 105.0
    assert handed_over([first, done, second], m, cap_at=120, now=106) == ""
    # a setup that waits (a write in setup(db)), until it returns
    setup, set_up = ev("setup", 100.0), ev("set_up", 100.5)
    assert handed_over([setup], m, cap_at=120, now=100 + HANDOFF_GRACE) == "locked"
    assert in_call_since([setup, set_up]) is None
    assert handed_over([setup, set_up], m, cap_at=120, now=110) == ""
    # the stalled instance's own open call says nothing about the successor
    assert handed_over([{**first, "process": "stage-0"}], m, cap_at=120, now=110) == ""


def overlapped(monkeypatch, events, endings, rows, unplaced=""):
    """run_once of exercise 06 under the overlap fault, its cluster, processes and
    read-back stood in: the plumbing from events and rows to verdicts runs for real."""
    from deliverylab.grade import runner
    from deliverylab.history import Read

    values = [f"producer-0:{i}" for i in range(3)]

    def write_input(cluster, topic, sizes, history, process="producer-0", arm=None):
        for i, v in enumerate(values):
            history.record("producer-0", "send", "ok", [v], topic=topic, partition=0,
                           offset=i)
        return arm() if arm is not None else None

    class FakeStage:
        client_id = "student"
        handover = "handled"

        def __init__(self, *args):
            self.src = args[3]

        def overlap(self):
            return endings, unplaced

        def run(self, process, plan):
            raise AssertionError("the overlap fault runs its two instances at once")

        def read_events(self):
            return [{"t": i * 0.01, **e} for i, e in enumerate(events)]

        def rows(self):
            return rows

        def calls(self):  # the payment service's log: each order paid once
            return [{"message_id": v, "effect": True} for v in values]

        def close(self):
            pass

    monkeypatch.setattr(runner, "write_input", write_input)
    monkeypatch.setattr(runner, "Nemesis", FakeNemesis)
    monkeypatch.setattr(runner, "Stage", FakeStage)
    monkeypatch.setattr(runner, "read_back", lambda cluster, topics, isolation: [
        Read(topics[0], 0, i, v) for i, v in enumerate(values)])
    return runner, values


def test_run_once_judges_two_overlapping_instances_by_the_rows(monkeypatch, tmp_path):
    ex = exercise("06")
    sol = tmp_path / "s.py"
    sol.write_text("def handle(db, message_id, order, where, payments): pass\n")
    done = [("stage-0", "done", ""), ("stage-1", "done", "")]
    stall = {"process": "stage-0", "kind": "fault", "fault": "stall_consumer",
             "outcome": "info", "message": "producer-0:0",
             "words": "stalled before your first database write for message #1"}
    polls = [{"process": p, "kind": "poll", "values": [f"producer-0:{i}"], "topic": "in",
              "partition": 0, "offset": i} for p, i in (("stage-0", 0), ("stage-1", 0),
                                                         ("stage-1", 1), ("stage-1", 2))]
    values = [f"producer-0:{i}" for i in range(3)]
    runner, _ = overlapped(monkeypatch, [stall, *polls], done, values)
    run = runner.run_once(ex, sol, "stall_consumer", 1, FakeCluster())
    assert run.state == JUDGED and run.ok
    assert run.crash.startswith("stalled before your first database write")
    assert run.plan == {"handover": "handled"}  # why the stalled instance resumed
    # the stalled instance wrote its row after its successor had: two rows, one message
    runner, _ = overlapped(monkeypatch, [stall, *polls], done, [*values, values[0]])
    run = runner.run_once(ex, sol, "stall_consumer", 1, FakeCluster())
    assert run.state == JUDGED and run.passed["one_row_each"] is False
    assert run.examples["duplicate_rows"] == [{"value": values[0]}]
    assert "stalled after it read" in ex.prop("one_row_each").hint_for("stall_consumer")
    # no overlap happened: the grader's problem, not judged
    runner, _ = overlapped(monkeypatch, polls, done, values,
                                unplaced="not judged: no write to stall at")
    run = runner.run_once(ex, sol, "stall_consumer", 1, FakeCluster())
    assert run.state == UNPLACED and set(run.passed.values()) == {None}
    # a handler that raised on resuming is the student's: finishes fails
    raised = {"process": "stage-0", "kind": "raised", "detail": "IntegrityError"}
    runner, _ = overlapped(monkeypatch, [stall, *polls, raised],
                                [("stage-0", "raised", ""), ("stage-1", "done", "")], values)
    run = runner.run_once(ex, sol, "stall_consumer", 1, FakeCluster())
    assert run.state == RAISED and run.passed["finishes"] is False


def test_a_fenced_zombie_may_stop_by_raising_where_06s_handler_may_not():
    """04's overlap fault leaves a zombie whose producer is fenced (fatal): stopping, by
    raising too, is its one right answer, so its raise hands over to the successor. 06's
    handler that raised on resuming raised on a normal case: the student's error."""
    ex04, ex06 = exercise("04"), exercise("06")
    assert ex04.overlap == "zombie_producer" and ex04.stall_at == 2
    assert ex04.hands_over("zombie_producer") and not ex06.hands_over("stall_consumer")
    tb = "Traceback (your code):\nKafkaException: KafkaError{code=_FENCED,fatal=True}"
    events = [e("stage-0", "raised", detail=tb)]
    endings = [("stage-0", "raised", ""), ("stage-1", "done", "")]
    assert judge_state(events, endings, {}, live=ex04.hands_over("zombie_producer")) == (
        JUDGED, "")
    # a zombie that ended without ever stalling is a single ending: its raise is its own
    assert judge_state(events, endings[:1], {}, live=True)[0] == RAISED


def zombie_run(monkeypatch, tmp_path, output: list[str], unplaced: str = ""):
    """run_once of 04 under zombie_producer, processes and read-back stood in: stage-0
    copied v0, v1 in a committed transaction, stalled before its 2nd commit_transaction
    with v2, v3 written, resumed after stage-1 ended and raised the fencing error;
    stage-1 copied what it polled. ``output``: what read_committed finds."""
    v = [f"producer-0:{i}" for i in range(4)]
    tb = "Traceback (your code):\nKafkaException: KafkaError{code=_FENCED,fatal=True}"
    stall = {"process": "stage-0", "kind": "fault", "fault": "zombie_producer",
             "outcome": "info", "words": "stalled before your 2nd commit_transaction"}
    events = [*(poll("stage-0", x, i) for i, x in enumerate(v)),
              *(send("stage-0", x) for x in v[:2]), stall,
              {"process": "stage-0", "kind": "resumed"},
              {"process": "stage-0", "kind": "raised", "detail": tb},
              *(poll("stage-1", x, i + 2) for i, x in enumerate(v[2:])),
              *(send("stage-1", x) for x in v[2:])]
    runner = wired(monkeypatch, events, [], output)
    fake = runner.Stage

    class OverlapStage(fake):
        handover = "ended"

        def overlap(self):
            return [("stage-0", "raised", ""), ("stage-1", "done", "")], unplaced

        def run(self, process, plan):
            raise AssertionError("the overlap fault runs its two instances at once")

    monkeypatch.setattr(runner, "Stage", OverlapStage)
    monkeypatch.setattr(runner, "TxnProducer", NoAbortedInput)
    sol = tmp_path / "s.py"
    sol.write_text("def transaction_loop(c, p, o, r): pass\n")
    return runner.run_once(exercise("04"), sol, "zombie_producer", 1, FakeCluster()), v


class NoAbortedInput:
    """The input's aborted transaction, stood in (it needs a broker)."""

    def __init__(self, *args, **kwargs):
        pass

    def begin(self):
        pass

    def write(self, n):
        pass

    def abort(self):
        pass


def test_run_once_judges_04s_zombie_by_what_its_successor_copied(monkeypatch, tmp_path):
    run, v = zombie_run(monkeypatch, tmp_path, [f"producer-0:{i}" for i in range(4)])
    assert run.state == JUDGED and run.ok, run.passed
    assert run.plan == {"handover": "ended"}
    assert run.crash.startswith("stalled before your 2nd commit_transaction")
    # the successor started past the stalled batch (the group's offsets had moved on
    # outside the transaction): the batch is lost, and the hint names the zombie fault
    run, v = zombie_run(monkeypatch, tmp_path, v[:2] + v[3:])
    assert run.state == JUDGED and run.passed["nothing_lost"] is False
    assert run.passed["finishes"] is True
    ex04 = exercise("04")
    ex04 = replace(ex04, faults=tuple(dict.fromkeys((*ex04.faults, "zombie_producer"))))
    fail = Report(ex04, tmp_path / "s.py", [run]).failures()[0]
    assert fail["property"] == "nothing_lost" and "transaction open" in fail["hint"]
    # no stall (a loop that never committed twice): the grader's problem, not judged
    run, v = zombie_run(monkeypatch, tmp_path, v, unplaced="not judged: no 2nd commit")
    assert run.state == UNPLACED and set(run.passed.values()) == {None}


class FakeProc:
    """A stage process stood in: ``ends_at`` polls of it, it has ended (None: never)."""

    def __init__(self, name: str, ends_at: int | None) -> None:
        self.name, self.ends_at, self.polls = name, ends_at, 0

    def poll(self):
        self.polls += 1
        return 0 if self.ends_at is not None and self.polls >= self.ends_at else None


def zombie_stage(monkeypatch, tmp_path, stalls: bool):
    """04's Stage.overlap with its processes stood in: stage-0 stalls at once (or ends
    without stalling), stage-1 ends after a few polls."""
    from deliverylab.grade import runner

    monkeypatch.setattr(runner, "bounds", lambda cluster, topic: [
        {"partition": 0, "high_watermark": 4}])
    resumed: list[str] = []
    monkeypatch.setattr(runner, "_resume", lambda proc: resumed.append(proc.name))
    cluster = type("C", (), {"bootstrap_servers": "localhost:1"})()
    stage = runner.Stage(exercise("04"), tmp_path / "s.py", cluster, "in", "out", "g",
                         tmp_path)
    plans: dict[str, dict] = {}

    def start(process, plan):
        plans[process] = plan
        return FakeProc(process, None if process == "stage-0" and stalls else 3)

    stage.start = start
    stage.read_events = lambda: ([{"process": "stage-0", "kind": "fault",
                                   "fault": "zombie_producer"}] if stalls else [])
    stage.finish = lambda process, proc, t: ("raised" if process == "stage-0" else "done",
                                             "")
    try:
        return stage.overlap(), plans, resumed, stage
    finally:
        stage.close()


def test_04s_zombie_resumes_once_its_successor_ended(monkeypatch, tmp_path):
    (endings, unplaced), plans, resumed, stage = zombie_stage(monkeypatch, tmp_path, True)
    assert plans["stage-0"] == {"stall": 2, "fault": "zombie_producer", "overlap": True}
    assert endings == [("stage-0", "raised", ""), ("stage-1", "done", "")]
    assert unplaced == "" and stage.handover == "ended" and resumed == ["stage-0"]


def test_04s_zombie_that_never_committed_twice_is_not_judged(monkeypatch, tmp_path):
    (endings, unplaced), plans, resumed, _ = zombie_stage(monkeypatch, tmp_path, False)
    assert "stage-1" not in plans and [p for p, _, _ in endings] == ["stage-0"]
    assert unplaced.endswith("your loop made no 2nd commit_transaction")


@pytest.mark.parametrize("code, ending", [
    ("pass", ("done", "")),
    (f"import sys; sys.exit({RAISED_EXIT})", ("raised", "")),  # the student's code raised
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", ("killed", "")),
    ("import sys; print('line 1'); print('boom', file=sys.stderr); sys.exit(1)",
     ("error", "line 1\nboom")),
    ("import time; time.sleep(30)", ("timeout", "stage-0 still ran after 1 s: killed")),
])
def test_a_childs_ending_is_read_one_way_for_a_stage_and_a_spark_driver(
        tmp_path: Path, code: str, ending: tuple[str, str]):
    # Real processes (no broker): how Stage.finish and spark_run._driver name an end.
    import sys
    import time

    from deliverylab.grade.runner import child_ending
    from deliverylab.process.children import Children

    children = Children()
    try:
        log = tmp_path / "stage-0.log"
        proc = children.start("stage-0", [sys.executable, "-u", "-c", code], log)
        assert child_ending(children, proc, "stage-0", log, 1.0, time.monotonic()) == ending
        assert proc.poll() is not None  # nothing outlives its ending
    finally:
        children.close()
