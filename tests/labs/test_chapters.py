"""Every chapter, executed headless with papermill, must demonstrate its claim.

Each chapter runs with the course's small parameters and its headless fault schedule
(``deliverylab.classroom.course.run``: the same run as ``make course``), asserts its own
claim in its last cells, and writes a results file; here we check that file, claim by claim, with
counts stated independently of the notebook. Each chapter runs once: chapters 01, 02 and
04 on containers (the engine's path, and chapter 01's network partition), the others on
local JVMs. Executed notebooks are kept in ``test-artifacts/labs/`` for post-mortems and
the book.

The stored notebooks must carry no outputs: that is checked too, without a kernel.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deliverylab.chapters.transactions.zombie import GENERATION_FENCING
from deliverylab.classroom.course import run as course
from deliverylab.notebook.chapter import number
from deliverylab.notebook.questions import COST_VARIANTS

LABS = Path(__file__).resolve().parents[2] / "labs"
CHAPTERS = course.discover(LABS)

Observed = dict[str, Any]

#: What each chapter's results file must show, beyond ``pass: true``.
CLAIMS: dict[str, Callable[[Observed], bool]] = {
    "00_tour": lambda o: o["lost"] == 0,
    "01_at_most_once": lambda o: (o["certain_acked"] is True and o["certain_copies"] == 0
                                  and o["spark_lost"] == o["lost"]
                                  and o["pipeline_missing"] >= 1 and o["duplicates"] == 0
                                  and o["pipeline_extra"] == 0
                                  and (o["backend"] != "docker"
                                       or (o["partition_acks1_lost"] == 5
                                           and o["partition_acksall_lost"] == 0))),
    "02_at_least_once": lambda o: (o["lost_ack_copies"] == 2
                                   and o["acks_lost_by_buttons"] >= 1
                                   and o["stream_duplicates"] >= 1
                                   and o["crash_pipeline_extra"] >= 1
                                   and o["lost"] == 0 and o["pipeline_missing"] == 0
                                   and o["grade_passed"] >= 3 and o["grade_failed"] == 0
                                   # the default (auto-committing) consumer loses the rest
                                   # of its batch; storing after processing loses nothing
                                   and o["autocommit_default_missing"] >= 1
                                   and o["autocommit_default_committed"]
                                   > o["autocommit_stored_committed"]
                                   and o["autocommit_stored_missing"] == 0),
    "02b_consumer_groups": lambda o: (o["stall_redone"] >= 1
                                      and o["stall_rejected_commits"] >= 1
                                      and o["spark_stall_duplicates"] == o["stall_redone"]
                                      and o["lost"] == 0 and o["pipeline_missing"] == 0
                                      and set(o["rebalance"]) == {"eager", "cooperative",
                                                                  "static"}),
    "03_idempotent_producer": lambda o: (o["plain_copies"] == 2 and o["idempotent_copies"] == 1
                                         and o["acks_lost_by_buttons"] >= 1
                                         and o["stream_duplicates"] == 0
                                         and o["restart_duplicates"] >= 1
                                         and o["restart_producer_ids"] >= 2
                                         and o["lost"] == 0),
    "04_transactions": lambda o: (o["aborted_hidden"] == 3 and o["marker_offsets"] == 6
                                  and o["partitions_held_back"] == 3
                                  and o["read_committed_while_open"] == 3
                                  and o["read_uncommitted_while_open"] == 9
                                  and o["ctp_pipeline_missing"] == 0
                                  and o["ctp_pipeline_extra"] == 0
                                  and o["ctp_aborted_visible_uncommitted"] >= 1
                                  and o["zombie_error"] is not None
                                  and o["live_zombie_error"] in GENERATION_FENCING
                                  and o["live_zombie_records"] > 0
                                  and o["live_zombie_visible_committed"] == 0
                                  and o["live_zombie_pipeline_extra"] == 0
                                  and o["grade_passed"] >= 3 and o["grade_failed"] == 0),
    "05_spark_pipeline": lambda o: (o["crash_query_extra"] == o["crash_query_predicted"] > 0
                                    and o["kill_driver_extra"] == o["kill_driver_predicted"] > 0
                                    and o["files_extra"] == 0 and o["database_extra"] == 0
                                    and o["kafka_txn_extra"] == 0
                                    and o["kafka_txn_aborted_visible_uncommitted"] > 0
                                    and o["dedup_duplicates_out"] == 0
                                    and o["dedup_records_out"] == o["values"]
                                    and o["txn_input_offsets"] > o["txn_input_records"]
                                    and o["pipeline_missing"] == 0
                                    and o["grade_passed"] >= 3 and o["grade_failed"] == 0),
    "06_side_effects": lambda o: (all(o[f"none_{f}_dup_rows"] >= 1 and o[f"none_{f}_dup_calls"]
                                      >= 1 for f in ("kill_after_db", "kill_after_http",
                                                     "stall_consumer", "restart_instance",
                                                     "lose_ack"))
                                  and o["none_faults_fired"] == 5
                                  and o["fixed_duplicates"] == 0
                                  and o["fixed_faults_fired"] == 10
                                  and o["offset_keyed_lose_ack_dups"] >= 1
                                  and o["stall_rejected_commits"] >= 1
                                  and o["relay_republished"] >= 1
                                  and o["relay_duplicates"] == 0
                                  and o["missing_rows"] == 0
                                  and o["spark_duplicates"] == o["checker_duplicates"]
                                  and o["grade_passed"] >= 3 and o["grade_failed"] == 0),
    "08_cost_of_guarantees": lambda o: (o["txn_1s_over_idempotent"] >= 0.6
                                        and o["acks0_over_acks_all"] >= 0.7
                                        and o["e2e_p95_ms"]["txn 1000ms"]
                                        >= 2 * max(o["e2e_p95_ms"]["txn 10ms"],
                                                   o["e2e_p95_ms"]["txn 100ms"])
                                        and len(o["table"]["rows"]) >= 7),
    "07_exactly_once_sources": lambda o: (o["predicted"] == o["lines"]
                                          == o["kill_duplicates"] == o["spark_kill_duplicates"]
                                          and o["term_duplicates"] == 0
                                          # a mid-stream kill: predicted from the position
                                          # committed before it, found in the topic; with
                                          # the defaults a flush committed something first
                                          and o["window_found"] == o["window_predicted"]
                                          and o["window_position"] is not None
                                          and 0 < o["window_predicted"] < o["window_kill_after"]
                                          and o["eos_kill_duplicates"] == 0
                                          and o["eos_kill_missing"] == 0
                                          # the exactly-once kill: inside an open
                                          # transaction, its aborted copies predicted from
                                          # the committed position; with the defaults a
                                          # commit landed before it
                                          and o["open_aborted"] == o["open_predicted"]
                                          == o["open_records"] == o["open_dups_uncommitted"]
                                          and 0 < o["open_predicted"] < o["open_lines_at_kill"]
                                          and o["open_position"] is not None
                                          and o["open_committed_while_down"]
                                          == o["open_lines_at_kill"] - o["open_predicted"]
                                          and o["open_committed_duplicates"] == 0
                                          and o["open_dups_committed"] == 0
                                          and o["open_markers"].count("ABORT") == 1
                                          and o["zombie_duplicates"] >= 1
                                          and o["eos_zombie_fenced_lines"] >= 1
                                          and o["eos_zombie_duplicates"] == 0
                                          and o["eos_zombie_missing"] == 0
                                          and o["python_commit_error"] is not None
                                          and o["python_value_committed"] == 0),
    "09_kafka_bugs": lambda o: (o["expired_duplicates"] == [1] * o["runs"]
                                and o["kept_duplicates"] == [0] * o["runs"]
                                and o["expired_late"] == [["NONE"]] * o["runs"]
                                and o["stale_aborted_reads"] == [1] * o["runs"]
                                and o["stale_late"] == [["NONE"]] * o["runs"]
                                and o["disk_commit_markers"] == 2
                                and len(o["java_late"]) == o["java_runs"] >= 1
                                and all(late and late[0] != "NONE"
                                        for late in o["java_late"])
                                and o["java_v1_late"] == [["NONE"]] * o["java_runs"]
                                and all(v < 5 for v in o["java_v1_versions"])
                                and o["transaction_version_restored"] is True
                                and o["hung_partitions"] == [1] * o["runs"]
                                and o["hung_found"] == [1] * o["runs"]
                                and o["hung_repaired"] == [True] * o["runs"]
                                and o["verified_partitions"] == [0] * o["runs"]
                                and all(late[0] != "NONE" for late in o["verified_late"])
                                and o["buttons_pressed"] == ["Stale EndTxn",
                                                             "Expiration above timeout"]
                                and o["matrix_runs"] >= o["matrix_cells"] >= 8
                                and o["matrix_not_held"] == {} and o["matrix_broken"] == {}
                                and len(o["matrix_spark_kafka"]) >= 1
                                and all(extra == predicted > 0 for extra, predicted
                                        in o["matrix_spark_kafka"])),
}


#: What each chapter's headless run predicts (``predict_<name>`` parameters), standing for
#: a student: a mix of right and wrong on purpose, so that the comparison, not the
#: prediction, is what the test holds the chapter to.
PREDICTIONS: dict[str, dict[str, Any]] = {
    "00_tour": {"predict_moved": [0, 1]},  # partition 1 is led by another broker
    "01_at_most_once": {"predict_lost": ["while_paused"]},
    "02_at_least_once": {"predict_autocommit": "successor"},  # wrong on purpose
    "02b_consumer_groups": {"predict_commit": "refused"},
    "03_idempotent_producer": {"predict_restart": ["duplicates", "refused"]},
    "05_spark_pipeline": {"predict_replayed": 10},  # max_offsets of the small run
    "07_exactly_once_sources": {"predict_kill": 0, "predict_window": 1, "predict_open": 1},
    "08_cost_of_guarantees": {"predict_slowest_e2e": "txn 1000ms",
                              "predict_lowest_throughput": "acks=all"},
    "09_kafka_bugs": {"predict_markers": "commit_abort", "predict_epoch": "same"},
}


def outcomes_of(chapter: str, observed: Observed) -> dict[str, Callable[[Any], bool]]:
    """Each prediction's recorded outcome, held to the run's own counts where the results
    file has them (the outcome must be the run's, not the prediction's)."""
    produced = [r for r in observed.get("table", {}).get("rows", [])
                if r["kind"] == "produce" and r["variant"] in COST_VARIANTS]
    return {
        "00_moved": lambda a: 0 in a,  # the killed broker led partition 0
        "02_autocommit": lambda a: (a == "never") == (observed["autocommit_default_missing"]
                                                      >= 1),
        "02b_commit": lambda a: (a == "refused") == (observed["stall_rejected_commits"] >= 1),
        "01_lost": lambda a: "while_paused" in a and "after_kill" not in a,
        "03_restart": lambda a: ("two_ids" in a) == (observed["restart_producer_ids"] >= 2)
        and ("duplicates" in a) == (observed["restart_duplicates"] >= 1),
        "05_replayed": lambda a: a == observed["kill_driver_extra"],
        "07_kill": lambda a: a == observed["kill_duplicates"],
        "07_window": lambda a: a == observed["window_found"],
        "07_open": lambda a: a == observed["open_aborted"],
        "08_slowest_e2e": lambda a: a == max(produced, key=lambda r: r["e2e_p95_ms"])["variant"],
        "08_lowest_throughput": lambda a: a == min(produced,
                                                   key=lambda r: r["records_s"])["variant"],
        "09_markers": lambda a: (a == "two_commits") == (observed["disk_commit_markers"] == 2),
        "09_epoch": lambda a: a in ("same", "bumped"),
    }


def check_predictions(chapter: str, results: dict[str, Any], where: str) -> None:
    """Every prediction the run was given was revealed: compared with the run's outcome
    (right or wrong) and recorded in the results file."""
    given = PREDICTIONS.get(chapter, {})
    recorded = {p["name"]: p for p in results.get("predictions", [])}
    assert {f"{number(chapter)}_{k.removeprefix('predict_')}" for k in given} \
        == set(recorded), (recorded, where)
    outcomes = outcomes_of(chapter, results["observed"])
    for name, p in recorded.items():
        assert p["source"] == "parameter", (p, where)
        predicted = given[f"predict_{name.split('_', 1)[1]}"]
        assert (set(p["predicted"]) == set(predicted) if p["kind"] == "set"
                else p["predicted"] == predicted), (p, given, where)
        same = (set(p["predicted"]) == set(p["actual"]) if p["kind"] == "set"
                else p["predicted"] == p["actual"])
        assert p["right"] is same, (p, where)
        assert outcomes[name](p["actual"]), (p, results["observed"], where)


@pytest.mark.parametrize("path", [LABS / f"{c}.ipynb" for c in CHAPTERS], ids=lambda p: p.name)
def test_no_notebook_holds_a_solution_or_an_answer_check(path: Path):
    nb = json.loads(path.read_text())
    tagged = [c.get("id") for c in nb["cells"] if "solution" in c["metadata"].get("tags", [])]
    assert tagged == [], f"{path.name}: solution cells {tagged}: solutions live in solutions/"
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert not [s for s in sources if "self_check(" in s or "answer = None" in s], path.name


@pytest.mark.parametrize("path", [LABS / f"{c}.ipynb" for c in CHAPTERS], ids=lambda p: p.name)
def test_each_prediction_is_required_before_the_run_and_revealed_after(path: Path):
    import re

    chapter = path.stem
    nb = json.loads(path.read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    made = {m.group(1): (i, m.group(2)) for i, s in enumerate(code)
            for m in re.finditer(r"^(\w+) = dl\.predict\(chapter, \"(\w+)\", predict_\2\b",
                                 s, re.M)}
    assert {f"predict_{short}" for _, short in made.values()} == set(
        PREDICTIONS.get(chapter, {})), f"{chapter}: predictions {made}"
    for var, (at, _) in made.items():
        required = [i for i, s in enumerate(code) if f"{var}.require()" in s]
        revealed = [i for i, s in enumerate(code) if f"dl.reveal({var}," in s]
        assert required and revealed and at < required[0] <= revealed[0], (var, made)
        first = code[required[0]]
        assert first.index(f"{var}.require()") < min(
            (first.index(w) for w in ("dl.reveal(", "with dl.busy(", "print(")
             if w in first), default=len(first)), f"{var}: required after the run started"


def _optional_parts(cells: list[dict[str, Any]]) -> list[bool]:
    """Per cell, whether it lies in an optional part: from a markdown cell tagged
    ``optional`` to the next heading of its level or above (JupyterLab's collapsed
    heading and the book's fold cover the same cells)."""
    def level(cell: dict[str, Any]) -> int:
        if cell["cell_type"] != "markdown":
            return 0
        heads = [len(line) - len(line.lstrip("#")) for line in "".join(cell["source"]).split("\n")
                 if line.startswith("#")]
        return min(heads, default=0)

    inside, open_level = [], 0
    for cell in cells:
        here = level(cell)
        if "optional" in cell["metadata"].get("tags", []):
            open_level = here
        elif open_level and here and here <= open_level:
            open_level = 0
        inside.append(bool(open_level))
    return inside


@pytest.mark.parametrize("path", [LABS / f"{c}.ipynb" for c in CHAPTERS], ids=lambda p: p.name)
def test_optional_parts_are_collapsed_and_nothing_after_needs_them(path: Path):
    """A deep dive is marked optional (its heading says so, JupyterLab shows it
    collapsed), and a student who skips it can run the rest: no later cell reads a name
    that only an optional part's code assigns."""
    import ast

    cells = json.loads(path.read_text())["cells"]
    for cell in cells:
        text = "".join(cell["source"])
        tagged = "optional" in cell["metadata"].get("tags", [])
        heading = cell["cell_type"] == "markdown" and text.startswith("#") and \
            "Optional" in text.split("\n", 1)[0]
        assert tagged == heading, f"{path.name}: {text[:60]!r}: tag and heading disagree"
        if tagged:
            assert cell["metadata"].get("jp-MarkdownHeadingCollapsed") is True, text[:60]

    def names(source: str, ctx: type) -> set[str]:
        tree = ast.parse("\n".join(line for line in source.split("\n")
                                   if not line.lstrip().startswith(("%", "!"))))
        found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ctx)}
        if ctx is ast.Store:
            found |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                      if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
            found |= {n.name for n in ast.walk(tree)
                      if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        return found

    only_optional: set[str] = set()
    for cell, optional in zip(cells, _optional_parts(cells), strict=True):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if optional:
            only_optional |= names(source, ast.Store)
        else:
            stored = names(source, ast.Store)  # bound here (a loop's, a comprehension's)
            needed = (names(source, ast.Load) - stored) & only_optional
            assert not needed, f"{path.name}: {source[:60]!r} needs {needed} from an optional part"
            only_optional -= stored


def workshop_times() -> dict[str, dict[str, str]]:
    """The instructors' guide's measured time per chapter (its workshop plan's table):
    reading, the runs, grading, and the measured total, as written there."""
    import re

    guide = (LABS.parent / "docs" / "instructors.md").read_text()
    row = re.compile(r"^\| (\d\d[a-z]?) [^|]+\| [\d,]+(?: words)?: ([\d.]+) min \| (\d+)[^|]*\| "
                     r"([^|]+?) \| ([\d.]+) min \|$")
    return {m[1]: {"reading": m[2], "running": m[3], "grading": m[4], "total": m[5]}
            for m in map(row.match, guide.splitlines()) if m}


@pytest.mark.parametrize("path", [LABS / f"{c}.ipynb" for c in CHAPTERS], ids=lambda p: p.name)
def test_each_chapter_states_its_measured_time_at_the_top(path: Path):
    """Under its title, the chapter's time as the workshop plan measured it: one source
    for both, so they cannot drift apart."""
    measured = workshop_times()
    assert len(measured) == len(CHAPTERS), sorted(measured)
    cells = json.loads(path.read_text())["cells"]
    assert "chapter-time" in cells[1]["metadata"].get("tags", []), path.name
    text = " ".join("".join(cells[1]["source"]).split())
    t = measured[number(path.stem)]
    assert text.startswith(f"*Time: about {t['total']} minutes measured*"), text
    assert f"reading about {t['reading']} min" in text and f"the runs {t['running']} s" in text
    assert (f"grading the exercise {t['grading']} s" in text) == (t["grading"] != "-"), text


@pytest.mark.parametrize("path", sorted(LABS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_stored_without_outputs(path: Path):
    nb = json.loads(path.read_text())
    dirty = [i for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
             and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert dirty == [], (f"{path.name}: code cells {dirty} carry outputs or execution "
                         "counts; clear them (jupyter nbconvert --clear-output --inplace)")


@pytest.mark.parametrize("path", [LABS / f"{c}.ipynb" for c in CHAPTERS], ids=lambda p: p.name)
def test_every_chapter_has_parameters_and_a_claim(path: Path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "parameters" in code[0]["metadata"].get("tags", []), "first code cell: parameters"
    assert "results_path" in "".join(code[0]["source"])
    assert "cluster.stop()" in "".join(code[-1]["source"]), "last cell stops the cluster"


#: Chapters with a graded exercise: CI injects the reference solution (``solution``,
#: outside labs/), one seed per fault, and the chapter asserts that it passes its grade.
SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"
GRADED: dict[str, dict[str, Any]] = {
    "02_at_least_once": {"solution": str(SOLUTIONS / "02_consume_loop" / "reference.py"),
                         "grade_seeds": 1},
    "04_transactions": {"solution": str(SOLUTIONS / "04_transaction_loop" / "reference.py"),
                        "grade_seeds": 1},
    "05_spark_pipeline": {"solution": str(SOLUTIONS / "05_foreach_batch" / "reference.py"),
                          "grade_seeds": 1},
    "06_side_effects": {"solution": str(SOLUTIONS / "06_idempotent_handler" / "reference.py"),
                        "grade_seeds": 1},
}


def run_and_check(chapter: str, artifacts: str, backend: str, **extra: Any) -> Observed:
    """Run one chapter headless on ``backend`` (and ``extra`` parameters) and hold it
    to its claim; returns what it observed."""
    variant = "-".join([backend, *map(str, extra.values())])
    out = Path(artifacts) / ("labs" if not extra else f"labs-{variant}")
    os.environ.setdefault("DELIVERYLAB_PROGRESS", "text")
    # A graded chapter leaves its grade where the instructor's view reads it.
    grade_file = out / "grades" / f"{number(chapter)}.json"
    grade_file.unlink(missing_ok=True)
    run = course.run_chapter(chapter, out, LABS, small=True, html=False,
                             extra={"backend": backend, **GRADED.get(chapter, {}),
                                    **PREDICTIONS.get(chapter, {}), **extra})
    print(f"{chapter} on {backend}: {run.wall_seconds:.0f} s wall; "
          f"results: {json.dumps(run.results)}")
    where = f"(executed notebook: {run.notebook})"
    assert run.error is None, f"{chapter} failed: {run.error} {where}"
    assert run.results is not None and run.results["chapter"] == chapter
    assert run.results["pass"] is True, f"{run.results['checks']} {where}"
    observed = run.results["observed"]
    assert observed.get("backend") == backend, f"ran on {observed.get('backend')} {where}"
    claim = CLAIMS.get(chapter)
    if claim is not None:
        assert claim(observed), f"{observed} {where}"
    check_predictions(chapter, run.results, where)
    if chapter in GRADED:
        graded = json.loads(grade_file.read_text())
        assert graded["exercise"] == number(chapter) and graded["failed"] == 0, graded["cells"]
        assert graded["passed"] == observed["grade_passed"], (graded["passed"], observed)
    return observed


#: Chapters whose claim is a throughput ratio: run after the parallel part of the suite
#: (``solo``) and with nothing beside them (``alone``: first in the solo part, before its
#: two lanes), so that another test's load does not weigh on one side of a ratio.
SOLO = ("08_cost_of_guarantees",)

#: The chapters that run on containers: the same claims, the brokers in Docker (and
#: chapter 01's network partition, which only containers can make). Their local run is
#: the same code path as every other chapter's, so each chapter runs once: a second,
#: local run of these three cost the suite about 2.5 minutes and covered nothing new.
ON_DOCKER = ("01_at_most_once", "02_at_least_once", "04_transactions")
# (chapter 00 also runs on containers inside the compose lab: tests/integration/test_docker_lab.py)


def backend_of(chapter: str, request: pytest.FixtureRequest) -> str:
    """``docker`` for :data:`ON_DOCKER` when an engine answers, else ``local``. In CI the
    engine fixture fails instead of skipping, so CI always runs them on containers; on a
    machine without Docker they still run, on local JVMs, and the test says so."""
    if chapter not in ON_DOCKER:
        return "local"
    try:
        request.getfixturevalue("broker_image")
    except pytest.skip.Exception as why:
        print(f"{chapter}: no Docker engine ({why}); running on local JVMs instead")
        return "local"
    return "docker"


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("chapter", [
    pytest.param(c, marks=[pytest.mark.solo, pytest.mark.alone]) if c in SOLO else c
    for c in CHAPTERS])
def test_chapter_demonstrates_its_claim(chapter: str, artifacts: str,
                                        request: pytest.FixtureRequest):
    run_and_check(chapter, artifacts, backend_of(chapter, request))


# Chapter 06's PostgreSQL path (the server, its rows, Spark over JDBC) is tested in
# tests/integration/spark/test_dbviews.py and tests/integration/services/test_fleet.py:
# a second run of the whole chapter on PostgreSQL cost ~2 minutes of both cores.
