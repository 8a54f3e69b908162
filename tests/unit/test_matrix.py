"""The matrix without a cluster: what to run (stages, sinks, faults), the table's Spark
rows, the results file round trip and the heatmap, from hand-made RunResults."""

from __future__ import annotations

import json

import pytest

from deliverylab import matrix as M
from deliverylab.checker import check
from deliverylab.errors import BadValue
from deliverylab.faults import FAULTS
from deliverylab.history import History, Read
from deliverylab.modes import mode
from deliverylab.notebook import plots
from deliverylab.scenario import SPARK_CLAIMS, SPARK_FAULTS, RunResult, Scenario
from deliverylab.spark.query import SINKS


def python_run(mode_name: str, fault: str, duplicates: int = 0, seed: int = 1,
               **facts: int) -> RunResult:
    """A Python-stage run judged like a real one, from a hand-written history."""
    history = History()
    history.record("producer-0", "send", "ok", ["producer-0:0"], topic="in", partition=0,
                   offset=0)
    reads = [Read("in", 0, i, "producer-0:0") for i in range(1 + duplicates)]
    result = check(history, reads, mode(mode_name).allowed_under(fault))
    return RunResult(mode_name, fault, seed, result, facts)


def spark_run(sink: str, fault: str, extra: int, predicted: int, seed: int = 1,
              **facts: int) -> RunResult:
    """A Spark-stage run: 3 values through the pipeline, ``extra`` of them written twice."""
    history = History()
    for seq in range(3):
        history.record("producer-0", "send", "ok", [f"producer-0:{seq}"], topic="in",
                       partition=0, offset=seq)
    reads = [Read("in", 0, seq, f"producer-0:{seq}") for seq in range(3)]
    reads += [Read("out", 0, i, f"producer-0:{i % 3}") for i in range(3 + extra)]
    allowed = mode("AT_LEAST_ONCE").allowed if sink == "kafka" else frozenset()
    result = check(history, reads, allowed, pipeline=("in", "out"))
    facts = {"extra_records": extra, "predicted": predicted, "crashed_batch": 1,
             "replay_off_prediction": abs(extra - predicted), **facts}
    return RunResult(f"spark/{sink}", fault, seed, result, facts, stage="spark",
                     faults=[{"time": 1.0, "name": fault, "did": "", "process": "spark-0"}])


# --- what to run ------------------------------------------------------------------------


def test_plan_gives_each_stage_its_own_faults():
    both = M.plan()
    assert both.stages == ("python", "spark")
    assert both.spark_faults == ("crash_query", "kill_driver")
    assert "crash_query" not in both.faults and "lose_ack" in both.faults
    cells = both.cells()
    assert ("spark", "kafka_txn", "kill_driver") in cells
    assert ("python", "TRANSACTIONAL", "lose_ack") in cells
    assert len(cells) == len(both.modes) * len(both.faults) + len(SINKS) * 2
    assert "spark/files" in both.rows() and "AT_MOST_ONCE" in both.rows()
    # Named faults are split between the stages that run them.
    picked = M.plan("python,spark", "at-least-once", "kafka", "lose_ack,kill_driver")
    assert picked.cells() == [("python", "AT_LEAST_ONCE", "lose_ack"),
                              ("spark", "kafka", "kill_driver")]
    assert M.plan("spark", sinks="files").cells() == [
        ("spark", "files", "crash_query"), ("spark", "files", "kill_driver")]


@pytest.mark.parametrize("kwargs, message", [
    ({"stages": "python,flink"}, "--stages item='flink' is not accepted; expected one of "
                                 "python, spark"),
    ({"sinks": "kafka,s3"}, "--sinks item='s3' is not accepted; expected one of kafka, "
                            "files, database, kafka_txn"),
    ({"faults": "lose_ack,unplug"}, "--faults item='unplug' is not accepted"),
    ({"stages": "spark", "faults": "lose_ack"}, "--faults item='lose_ack' is not accepted;"
                                                " expected one of crash_query, kill_driver"),
    ({"faults": "lose_ack"}, "at least one fault of the spark stage too (crash_query, "
                             "kill_driver)"),
    ({"modes": "sometimes"}, "mode='sometimes' is not accepted"),
])
def test_bad_choices_are_named_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        M.plan(**kwargs)


def test_the_command_line_refuses_bad_names_before_starting_anything(capsys):
    assert M.main(["--stages", "spark", "--faults", "crash_producer"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("matrix: --faults item='crash_producer' is not accepted")
    assert M.main(["--stages", "spark", "--spark-values", "5"]) == 2
    assert "values=5 is not accepted" in capsys.readouterr().err


def test_spark_scenarios_are_checked_and_seed_their_crash_batch():
    s = Scenario("AT_LEAST_ONCE", "kill_driver", values=40, stage="spark", sink="database")
    assert s.row == "spark/database"
    batches = {s.crash_batch(seed) for seed in range(1, 40)}
    assert batches == {0, 1, 2, 3}  # 40 values, 10 offsets a batch: >= 4 batches
    assert s.crash_batch(5) == s.crash_batch(5)
    with pytest.raises(ValueError, match="fault='lose_ack' is not accepted; expected one "
                                         "of none, crash_query, kill_driver"):
        Scenario("AT_LEAST_ONCE", "lose_ack", stage="spark")
    with pytest.raises(ValueError, match="fault='crash_query' is not accepted"):
        Scenario("AT_LEAST_ONCE", "crash_query")  # the Python stage has no Spark query
    with pytest.raises(ValueError, match="sink='s3' is not accepted"):
        Scenario("AT_LEAST_ONCE", "none", stage="spark", sink="s3")
    with pytest.raises(ValueError, match="mode='TRANSACTIONAL' is not accepted"):
        Scenario("TRANSACTIONAL", "none", stage="spark")
    with pytest.raises(ValueError, match="stage='flink' is not accepted"):
        Scenario("AT_LEAST_ONCE", stage="flink")


# --- claims and the table ---------------------------------------------------------------


def test_spark_rows_draw_their_faults_from_the_one_registry():
    assert SPARK_FAULTS == ("none", "crash_query", "kill_driver")
    assert all(FAULTS[f].kind == "client" for f in SPARK_FAULTS[1:])


def test_every_spark_row_has_a_claim_for_both_crashes():
    assert set(SPARK_CLAIMS) == {(f"spark/{s}", c) for s in SINKS
                                 for c in ("crash_query", "kill_driver")}
    for rules in SPARK_CLAIMS.values():
        assert set(rules.values()) <= {"always", "never"}


def test_the_kafka_sink_must_replay_exactly_the_predicted_batch():
    assert spark_run("kafka", "crash_query", extra=2, predicted=2).failures() == []
    assert spark_run("kafka", "kill_driver", extra=1, predicted=2).failures() == [
        "spark/kafka/kill_driver: expected no replay_off_prediction, saw 1 (seed 1)"]
    assert "expected pipeline_extra, saw none" in spark_run(
        "kafka", "crash_query", extra=0, predicted=2).failures()[0]


def test_exactly_once_sinks_must_write_nothing_twice():
    assert spark_run("files", "crash_query", extra=0, predicted=3).failures() == []
    bad = spark_run("database", "crash_query", extra=1, predicted=3).failures()
    assert any("outside what spark/database allows: pipeline_extra" in f for f in bad)
    assert any("expected no extra_records, saw 1" in f for f in bad)
    assert spark_run("kafka_txn", "kill_driver", extra=0, predicted=3,
                     aborted_visible_uncommitted=3).failures() == []
    assert "expected aborted_visible_uncommitted, saw none" in spark_run(
        "kafka_txn", "kill_driver", extra=0, predicted=3).failures()[0]


def test_table_prints_spark_rows_with_their_claim():
    runs = [python_run("AT_LEAST_ONCE", "lose_ack", duplicates=1, acks_lost=1),
            spark_run("kafka", "crash_query", 2, 2, seed=1),
            spark_run("kafka", "crash_query", 1, 2, seed=2),
            spark_run("files", "kill_driver", 0, 3)]
    text = M.table(runs)
    lines = text.splitlines()
    kafka = next(line for line in lines if line.startswith("spark/kafka      crash_query "))
    assert "2/2" in kafka and "FAILED (1)" in kafka  # out-extra in both, one off
    replay = next(line for line in lines if line.startswith("spark/kafka ")
                  and "extra records == predicted batch" in line)
    assert "1,2" in replay and "2,1" in replay and "FAILED (1)" in replay
    files = next(line for line in lines if line.startswith("spark/files ")
                 and "0 extra" in line)
    assert files.endswith(": ok")
    assert M.spark_table([python_run("IDEMPOTENT", "lose_ack", acks_lost=1)]) == ""


# --- results file and heatmap -----------------------------------------------------------


def test_results_file_round_trips(tmp_path):
    runs = [python_run("AT_LEAST_ONCE", "lose_ack", duplicates=1, acks_lost=1),
            spark_run("kafka_txn", "kill_driver", 0, 3, aborted_visible_uncommitted=3)]
    path = M.save(runs, tmp_path / "results" / "matrix.json")
    back = M.load(path)
    assert [r.to_dict() for r in back] == [r.to_dict() for r in runs]
    assert [r.failures() for r in back] == [r.failures() for r in runs]
    assert back[1].stage == "spark" and back[1].result.allowed == frozenset()
    assert M.table(back) == M.table(runs)


def test_files_written_before_facts_and_stage_were_stored_still_load(tmp_path):
    old = python_run("TRANSACTIONAL", "restart_producer", zombie_fenced=1,
                     aborted_visible_uncommitted=2).to_dict()
    del old["facts"], old["stage"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps([old]))
    (run,) = M.load(path)
    assert run.facts == {"zombie_fenced": 1, "aborted_visible_uncommitted": 2}
    assert run.stage == "python" and run.failures() == []


def test_load_names_a_missing_or_wrong_file(tmp_path):
    with pytest.raises(ValueError, match="written by `make matrix`"):
        M.load(tmp_path / "nothing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"mode": "x"}')
    with pytest.raises(ValueError, match="a JSON list of matrix runs"):
        M.load(bad)


def test_counts_failures_and_heatmap_show_k_of_n_with_jepsen_names(tmp_path):
    runs = [python_run("AT_LEAST_ONCE", "lose_ack", duplicates=1, acks_lost=1, seed=1),
            python_run("AT_LEAST_ONCE", "lose_ack", acks_lost=1, seed=2),
            python_run("IDEMPOTENT", "lose_ack", duplicates=1, acks_lost=1),
            spark_run("kafka", "crash_query", 2, 2),
            spark_run("kafka_txn", "kill_driver", 0, 3, aborted_visible_uncommitted=3)]
    cells = M.counts(runs)
    assert cells[("spark/kafka_txn", "kill_driver")]["k"]["aborted_visible_uncommitted"] == 1
    assert cells[("spark/kafka_txn", "kill_driver")]["held"] == 1
    assert cells[("AT_LEAST_ONCE", "lose_ack")]["k"]["duplicates"] == 1
    assert cells[("AT_LEAST_ONCE", "lose_ack")]["n"] == 2
    assert cells[("AT_LEAST_ONCE", "lose_ack")]["held"] == 1  # seed 2 lacked the dup
    assert cells[("IDEMPOTENT", "lose_ack")]["broken"] == {"duplicates"}
    assert cells[("spark/kafka", "crash_query")]["k"]["pipeline_extra"] == 1
    assert M.failures(cells) == (
        {"AT_LEAST_ONCE / lose_ack": "1/2", "IDEMPOTENT / lose_ack": "0/1"},
        {"IDEMPOTENT / lose_ack": ["duplicates"]})
    fig = plots.heatmap(runs, save=tmp_path / "matrix.png")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[:3] == ["lost write", "duplicate", "aborted read (G1a)"]
    assert labels[-3:] == ["aborted, seen by read_uncommitted", "zombie fenced",
                           "claim held"]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "AT_LEAST_ONCE  lose_ack", "IDEMPOTENT  lose_ack", "spark/kafka  crash_query",
        "spark/kafka_txn  kill_driver"]
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("1/2") == 2  # the duplicate column, and the claim column
    framed = [p for p in ax.patches if p.get_linewidth() == 2.0]
    assert len(framed) == 1  # IDEMPOTENT's duplicate broke its promise
    assert (tmp_path / "matrix.png").stat().st_size > 1000
    assert fig._repr_png_().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="runs=\\[\\] is not accepted"):
        plots.heatmap([])


def test_run_matrix_refuses_a_misspelt_stage_before_running_anything():
    with pytest.raises(BadValue, match="pyhton"):
        M.run_matrix(None, stages=("pyhton",))
