"""The package's shape, checked: the rules of ``docs/whats-here.md``, read from the source.

The rules are :data:`RULES`, the same list, in the same order and words, as the map's
"The rules that hold the house together" (a test compares them; the map says why each
holds). Every test here names in its docstring the rule it checks (``Rule 4: ...``), and
every rule has a test; a rule with an exception names it in an allow-list of this module
(``NOT_WAITS``, ``NOT_WAITS_OUTSIDE_LIB``, ``NOT_READ_BACKS``, ``NOT_OP_LOGS``,
``NO_KIT``, ``NOT_CHILDREN``), each entry with why, and an entry whose code is gone fails
too. The finders (``layout_finders.py``) read the source with ``ast``, so a test fails on
the line that breaks a rule, before anything runs; each finder is tried here on
hand-written source, so a finder that finds nothing cannot pass a rule unnoticed.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from tests.unit import layout_finders as F

LIB, ROOT = F.LIB, F.ROOT
MAP = ROOT / "docs" / "whats-here.md"
LABS = ROOT / "labs"

#: The map's rules, in its order and words (its numbered bold titles).
RULES = (
    "The ground vocabulary imports only itself",
    "The machinery never imports a face or a chapter kit",
    "No import circle, and no arrow back up",
    "One wait",
    "One read-back",
    "No module over 650 lines",
    "One op log",
    "One kit per chapter",
    "One way to start a child process",
)

GROUND = {"errors", "values", "history", "matching", "checker", "modes", "faults", "waiting"}
FACES = {"notebook", "classroom", "grade", "chapters"}
MAX_LINES = 650
GRAPH = F.graph()


def test_the_map_lists_the_rules_the_test_checks():
    """Rules 1-9: the map's numbered rules are RULES, and every test here names one."""
    text = MAP.read_text()
    section = text.split("## The rules that hold the house together", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^(\d+)\. \*\*(.+?)\*\*", section, re.M) == [
        (str(n), title) for n, title in enumerate(RULES, 1)]
    named: set[int] = set()
    unnamed = []
    for name, test in vars(sys.modules[__name__]).items():
        if not name.startswith("test_"):
            continue
        m = re.match(r"Rules? (\d+)(?:-(\d+))?: ", test.__doc__ or "")
        if m is None or not 1 <= int(m.group(1)) <= int(m.group(2) or m.group(1)) <= len(RULES):
            unnamed.append(name)
            continue
        named.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    assert not unnamed, f"tests whose docstring names no rule ('Rule N: ...'): {unnamed}"
    assert named == set(range(1, len(RULES) + 1)), "a rule no test checks"
    assert f"checks all {len(RULES)} from the source" in text.replace("nine", "9")


# --- rules 1-3: the import graph ------------------------------------------------------


def test_the_graph_sees_the_package():
    """Rules 1-3: the import graph reads the package (a reader that found nothing would
    pass every import rule)."""
    assert {"cluster.cluster", "nemesis", "proxy.proxy", "spark.inspector"} <= set(GRAPH)
    assert any(t == "cluster.ready" for t, _ in GRAPH["nemesis"])


def test_the_ground_vocabulary_imports_only_itself():
    """Rule 1: errors, values, history, matching, checker, modes, faults and waiting
    import only each other: everything leans on them, so they lean on nothing."""
    broken = [f"{m} imports {t} (line {line})" for m in GROUND
              for t, line in GRAPH[m] if t not in GROUND]
    assert not broken, broken


def test_the_machinery_never_imports_a_face_or_a_chapter_kit():
    """Rule 2: notebook/, classroom/, grade/ and chapters/ import the machinery, never
    the other way round."""
    machinery = [m for m in GRAPH if m and F.top(m) not in FACES]
    broken = [f"{m} imports {t} (line {line})" for m in machinery
              for t, line in GRAPH[m] if F.top(t) in FACES]
    assert not broken, broken


def test_chapter_kits_are_imported_by_kits_and_graders_only():
    """Rule 2: in the package, chapters/ is imported by chapters/ and grade/ only (the
    notebooks, tests and benches import it from outside)."""
    broken = [f"{m} imports {t} (line {line})" for m in GRAPH if m
              for t, line in GRAPH[m]
              if F.top(t) == "chapters" and F.top(m) not in {"chapters", "grade"}]
    assert not broken, broken


def test_no_import_circle_between_modules():
    """Rule 3: no circle between modules, counting every import (type-only, in a
    function, the package __init__ run on the way), with no allow-list."""
    # A module that needs only the shape of one above it names that shape as a Protocol
    # of its own; shared names move down into a small module. The facade ('') imports
    # nothing at import time; packages' __init__ re-exports are modules too.
    circles = F.circles(GRAPH)
    assert not circles, circles


def test_a_type_only_import_and_one_in_a_function_count():
    """Rule 3: the graph counts an ``if TYPE_CHECKING:`` import and a function's own."""
    # `from ..c import d` also runs c/__init__ (p/__init__ is the importer's own).
    tree = ast.parse("from typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from .b import B\n"
                     "def f():\n    from ..c import d\n")
    assert F.imports(tree, "p.a", False, {"p", "p.a", "p.b", "c", "c.d"}) == {
        ("p.b", 3), ("c", 5), ("c.d", 5)}


def test_a_circle_through_a_package_init_counts():
    """Rule 3: a circle closed through a package's __init__ is found."""
    # What Cluster.connect() was: cluster.cluster imported connect.connect in a
    # function, and connect.connect imported cluster.ready, which runs cluster/__init__,
    # which imports cluster.cluster. No two modules name each other, yet it loops.
    modules = {"cluster", "cluster.cluster", "cluster.ready", "connect", "connect.connect"}
    sources = {"cluster": ("from .cluster import Cluster", True),
               "cluster.cluster": ("from . import ready\n"
                                   "def connect():\n    from ..connect.connect import C\n",
                                   False),
               "cluster.ready": ("", False),
               "connect": ("from .connect import C", True),
               "connect.connect": ("from ..cluster import ready", False)}
    graph = {m: F.imports(ast.parse(src), m, pkg, modules)
             for m, (src, pkg) in sources.items()}
    assert F.circles(graph) == [["cluster", "cluster.cluster", "connect", "connect.connect"]]


def test_the_circle_finder_finds_a_circle():
    """Rule 3: the circle finder (Tarjan) finds one of three modules."""
    assert F.circles({"a": {("b", 1)}, "b": {("c", 1)}, "c": {("a", 1)}, "d": set()}) == [
        ["a", "b", "c"]]


#: The layers, bottom up: a module imports only from its own layer or those below it
#: (docs/whats-here.md draws the same order). Keyed by wing (a folder) or top-level
#: module; the facade ('') is above them all and imports nothing at import time.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("the ground vocabulary", frozenset(GROUND)),
    ("the host: child processes, the JVMs' jars and profiles",
     frozenset({"process", "runtime"})),
    ("Kafka clients that speak the vocabulary", frozenset({"clients", "workload"})),
    ("the brokers and their fault proxies", frozenset({"proxy", "cluster"})),
    ("what runs on, reads or breaks a cluster",
     frozenset({"readers", "segments", "connect", "nemesis", "schedule", "spark",
                "services"})),
    ("runs judged end to end", frozenset({"scenario", "matrix"})),
    ("the faces and the chapters' kits", frozenset(FACES)),
)
LAYER_OF = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}


def test_every_wing_and_top_level_module_has_one_layer():
    """Rule 3: every wing and top-level module stands in exactly one of LAYERS."""
    units = {F.top(m) for m in GRAPH if m}
    named = [u for _, layer in LAYERS for u in layer]
    assert len(named) == len(set(named)), "a unit named in two layers"
    assert set(named) == units, sorted(set(named) ^ units)


def test_no_arrow_back_up():
    """Rule 3: every import goes down LAYERS or stays in its layer."""
    # cluster/ importing connect/ (Cluster.connect) was one: the brokers below, what
    # runs on them above. A lower layer that needs a shape of a higher one names it as
    # a Protocol of its own (cluster.Stops, what the cluster stops with itself).
    broken = [f"{m} ({LAYERS[LAYER_OF[F.top(m)]][0]}) imports {t} "
              f"({LAYERS[LAYER_OF[F.top(t)]][0]}), line {line}"
              for m in GRAPH if m for t, line in GRAPH[m]
              if t and LAYER_OF[F.top(t)] > LAYER_OF[F.top(m)]]
    assert not broken, broken


def test_the_map_draws_the_layers_the_test_keeps():
    """Rule 3: the map lists the layers bottom up as LAYERS does, `;` between two."""
    text = MAP.read_text()
    order = " ".join(text.split("never above:", 1)[1].split(". A module", 1)[0].split())
    groups = order.split(";")
    assert len(groups) == len(LAYERS) and "the ground vocabulary" in groups[0], order
    assert [set(re.findall(r"`(\w+)`", g)) for g in groups[1:]] == [
        set(units) for _, units in LAYERS[1:]], order


def test_no_import_circle_between_wings():
    """Rule 3: no two wings (or top-level modules) import each other, even through
    modules that do not; inside one layer, wings lean on each other one way."""
    wings = {F.top(m): set() for m in GRAPH if m}
    for m in GRAPH:
        for t, line in GRAPH[m]:
            if m and t and F.top(t) != F.top(m):
                wings[F.top(m)].add((F.top(t), line))
    circles = F.circles(wings)
    assert not circles, circles


# --- rule 4: one wait -----------------------------------------------------------------

#: Loops in lib/ that pause or watch a clock but are not waits, each with why: they do
#: work every round (read records, consume, drive a producer, sample, kill), which no
#: probe of ``waiting.wait_until`` should hide. Keyed "module:qualname".
NOT_WAITS = {
    "chapters.at_least_once.autocommit:crash_instance": "consumes until it holds a whole "
                                                        "batch",
    "chapters.at_least_once.autocommit:_successor": "processes records until the end "
                                                    "offset",
    "chapters.consumer_groups.rebalance:_Member._loop": "a group member's consume loop (its "
                                                        "stall is the fault)",
    "chapters.consumer_groups.rebalance:stall_in_group": "drives the producer at its rate "
                                                         "through the stall",
    "chapters.cost_of_guarantees.costs:throughput": "sends for a set number of seconds: a "
                                                    "measurement, nothing awaited",
    "chapters.cost_of_guarantees.costs:latency": "sends each record at its due time: the "
                                                 "measured rate, serving delivery reports",
    "chapters.cost_of_guarantees.costs:latency.read": "the latency reader: stamps each "
                                                      "record as it arrives",
    "chapters.exactly_once_sources.sources:Runs.zombie.writer": "appends a line per 1/rate "
                                                                "until stopped: a pacer",
    "chapters.exactly_once_sources.window:stream": "paces a writer, a chunk per pace_s: "
                                                   "awaits nothing",
    "chapters.exactly_once_sources.window:_freeze_inside": "freezes the worker up to `tries` "
                                                           "times, a settle each: an "
                                                           "experiment repeated, no probe",
    "chapters.transactions.zombie:instance": "the zombie's consume-transform-produce loop",
    "classroom.hub.users:sweep": "SIGKILLs the student's processes every round until none "
                                 "is left",
    "classroom.hub.__main__:main": "serves until the hub ends or Ctrl-C: no deadline, "
                                   "nothing awaited",
    "classroom.hub.client:Kernel.execute": "receives the kernel's messages until reply and "
                                           "idle",
    "classroom.sizing.measure:Sampler._loop": "samples memory every interval until stopped",
    "cluster.ready:wait_ready.first_producer": "the first of two producers' inits to end "
                                               "(futures' wait, woken by either): a race",
    "cluster.ready:wait_ready.read_back": "reads records until the token (one probe of a "
                                          "ready step)",
    "notebook.progress:busy._tick": "a ticker that shows the seconds elapsed until stopped",
    "notebook.widgets:FaultPanel.start_auto_refresh.loop": "refreshes the panel every "
                                                           "interval until closed",
    "readers:_drain": "reads records until every partition's end (the one read-back)",
    "readers:final_read": "retries a read a counted number of times after a client error; "
                          "what it waits for between is wait_whole's",
    "readers:peek": "reads records for a few seconds",
    "services.fleet:ServiceFleet._watch": "restarts killed instances and relays until the "
                                          "fleet stops: a supervisor",
    "services.instance:Relay.loop": "a relay's work loop, until it is stopped",
    "workload:Pipeline.run": "the pipeline's consume-process-produce loop",
}


def test_every_wait_goes_through_the_one_wait():
    """Rule 4: no hand-written wait loop in lib/ outside waiting.wait_until, but the
    named NOT_WAITS; an entry whose loop is gone fails too."""
    # A hand-written `while ... sleep` drifts from the one wait: it returns None on
    # timeout, forgets to look whether the process died, or does not say what it
    # waited for. waiting.wait_until is the one place such a loop is written.
    loops = F.wait_loops()
    assert "waiting:wait_until" in loops  # the finder sees the one it must
    broken = [f"{where} (line {line}): a hand-written wait loop ({why}); use "
              "waiting.wait_until, or name it in NOT_WAITS with why it is not a wait"
              for where, (line, why) in loops.items()
              if where != "waiting:wait_until" and where not in NOT_WAITS]
    assert not broken, broken
    stale = sorted(set(NOT_WAITS) - set(loops))
    assert not stale, f"NOT_WAITS names loops that are gone: {stale}"


def test_the_wait_loop_finder_sees_every_shape_of_a_poll():
    """Rule 4: the finder sees a poll however written, each loop of a function (an
    allowed first one hides no second), and passes what polls nothing."""
    tree = ast.parse(
        "import time\nimport time as t\nfrom time import sleep as nap, perf_counter\n"
        "def a(p):\n    end = time.monotonic() + 5\n    while time.monotonic() < end:\n"
        "        pass\n"
        "def b(p):\n    for _ in range(50):\n        if p():\n            return\n"
        "        t.sleep(0.1)\n"
        "def c(p, ev):\n    while not p():\n        ev.wait(0.1)\n"
        "def d(p):\n    t0 = perf_counter()\n    while perf_counter() - t0 < 5:\n        p()\n"
        "def e(p):\n    while not p():\n        nap(1)\n"
        "def f(p, deadline):\n    while not deadline.expired():\n        p()\n"
        "class G:\n    def h(self):\n        while True:\n            time.sleep(1)\n"
        "        while not self.ok():\n            nap(1)\n"  # a second loop: its own key
        # not polls: a shared deadline, a wait on each handle, a callback defined in a
        # loop, a loop that neither pauses nor reads a clock
        "def i(threads, sends, items):\n    end = time.monotonic() + 5\n"
        "    for th in threads:\n        th.join(max(0, end - time.monotonic()))\n"
        "    for s in sends:\n        s.wait(10)\n"
        "    while items:\n        def cb():\n            time.sleep(1)\n        items.pop()\n")
    assert {k: why for k, (_, why) in F.wait_loops_in(tree, "m").items()} == {
        "m:a": "while around time.monotonic()",
        "m:b": "for around time.sleep()",
        "m:c": "while around ev.wait(timeout)",
        "m:d": "while around time.perf_counter()",
        "m:e": "while around time.sleep()",
        "m:f": "while around deadline.expired()",
        "m:G.h": "while around time.sleep()",
        "m:G.h#2": "while around time.sleep()",
    }


#: Loops in tests/ and bench/ that pause or watch a clock but are not waits, each with
#: why: they do work every round (send, read, sample, keep a kernel busy) rather than
#: look at something until it holds. Keyed "file:qualname", the file relative to the
#: repository. A test waits as the package does, through ``waiting.wait_until`` (or
#: ``verdict_within`` where running out of time is the answer it checks).
NOT_WAITS_OUTSIDE_LIB = {
    "tests/integration/classroom/test_hub.py:test_three_students_at_once.run":
        "keeps a student's kernel busy every 10 s until the whole class's runs end, so the "
        "idle culler does not take its server: a heartbeat with no deadline",
    "tests/integration/classroom/test_temp_files.py:test_a_run_leaves_nothing_in_the_shared_tmp":
        "reads the child's stdout line by line until its RESULT line (child.wait only in "
        "the message when the child ended first)",
    "tests/integration/cluster/test_tools.py:test_console_consumer_and_consumer_groups_describe":
        "consumes until it holds two of the three records, the offset its commit then "
        "gives kafka-consumer-groups to describe",
    "tests/unit/notebook/test_stream.py:_Workload.run": "a stand-in workload's send loop: "
                                                        "a record every 2 ms, nothing "
                                                        "awaited",
    "bench/cpu_load.py:loaded.sample": "samples the load average every interval until the "
                                       "benchmark's block ends",
}


def test_every_wait_in_tests_and_bench_goes_through_the_one_wait():
    """Rule 4: no hand-written wait loop in tests/ or bench/ either, but the named
    NOT_WAITS_OUTSIDE_LIB; an entry whose loop is gone fails too."""
    # A test's own wait drifts as the package's did: one asserts after the loop and
    # another does not, one says "timed out" without saying waiting for what.
    loops = F.wait_loops_outside_lib()
    assert "tests/unit/notebook/test_stream.py:_Workload.run" in loops  # one it must see
    broken = [f"{where} (line {line}): a hand-written wait loop ({why}); use "
              "waiting.wait_until (or verdict_within where a timeout is the answer), or "
              "name it in NOT_WAITS_OUTSIDE_LIB with why it is not a wait"
              for where, (line, why) in loops.items() if where not in NOT_WAITS_OUTSIDE_LIB]
    assert not broken, broken
    stale = sorted(set(NOT_WAITS_OUTSIDE_LIB) - set(loops))
    assert not stale, f"NOT_WAITS_OUTSIDE_LIB names loops that are gone: {stale}"


def test_the_wait_loop_finder_reads_every_file_of_tests_and_bench(tmp_path: Path):
    """Rule 4: outside lib/ the finder reads tests/ and bench/ at any depth (a conftest,
    a class of tests), keys each loop by its path from the root, and reads no other
    folder (lib/ is the package's rule, keyed by module)."""
    poll = "import time\ndef f(p):\n    while not p():\n        time.sleep(0.1)\n"
    for rel, src in {
        "tests/conftest.py": poll,
        "tests/unit/x/test_a.py": ("import time\nclass TestA:\n    def test_b(self, p):\n"
                                   "        end = time.monotonic() + 5\n"
                                   "        while not p() and time.monotonic() < end:\n"
                                   "            pass\n"),
        "tests/unit/x/test_c.py": "def test_d(items):\n    while items:\n        items.pop()\n",
        "bench/deep/e.py": poll,
        "lib/deliverylab/g.py": poll,
        "scripts/h.py": poll,
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(src)
    assert F.wait_loops_outside_lib(tmp_path) == {
        "tests/conftest.py:f": (3, "while around time.sleep()"),
        "tests/unit/x/test_a.py:TestA.test_b": (5, "while around time.monotonic()"),
        "bench/deep/e.py:f": (3, "while around time.sleep()"),
    }


# --- rule 5: one read-back ------------------------------------------------------------

#: Reads of a topic outside ``readers.py`` that are not read-backs, each with why: a
#: consumer assigned partitions by hand (no group: a read of its own, in lib, tests or
#: bench), or the checker's ``Read`` built by hand in lib. A topic read back to its end
#: goes through ``readers.read_back``/``read_records``, so it either ends or raises
#: ``ReadTimeout``. Keyed "file:qualname", the file relative to the repository.
NOT_READ_BACKS = {
    "lib/deliverylab/cluster/ready.py:wait_ready.read_back": "a readiness probe: reads its "
                                                            "own token, asked again by the "
                                                            "wait",
    "lib/deliverylab/chapters/at_least_once/autocommit.py:_successor":
        "the group's successor, processing from its committed offset: what chapter 02 "
        "shows",
    "lib/deliverylab/chapters/cost_of_guarantees/costs.py:latency":
        "times each record from the topic's end as it arrives: a measurement",
    "lib/deliverylab/checker.py:reads_from_records":
        "rows a caller already holds (a Spark DataFrame's, a test's dicts) as reads: it "
        "consumes no topic",
    "lib/deliverylab/spark/inspector.py:Inspector.reads":
        "Spark's batch read of a topic (chapter 05's inspector), so Spark and the checker "
        "judge the same read: Spark's engine, no consumer of ours",
    "lib/deliverylab/spark/sinks.py:_in_input_order":
        "a Spark sink's folder or table as reads: no topic",
}


def _reads_by_hand() -> dict[str, tuple[int, str]]:
    found: dict[str, tuple[int, str]] = {}
    for folder in ("lib", "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            where = str(path.relative_to(ROOT))
            for scope, line in F.assigns(tree):
                found.setdefault(f"{where}:{scope}", (line, "a consumer assigned by hand"))
            if folder == "lib":  # tests build reads by hand: hand-written histories
                for scope, line in F.reads_built(tree):
                    found.setdefault(f"{where}:{scope}", (line, "the checker's Read built "
                                                                "by hand"))
    return found


def test_every_read_back_goes_through_readers():
    """Rule 5: no consumer assigned by hand (lib, tests, bench) and no Read built by hand
    (lib) outside readers.py, but the named NOT_READ_BACKS; a stale entry fails."""
    found = _reads_by_hand()
    assert "lib/deliverylab/readers.py:_drain" in found  # the finder sees the one it must
    assert "lib/deliverylab/readers.py:read_back.read" in found
    broken = [f"{where} (line {line}): {what}; read the topic back with readers.read_back "
              "or read_records, or name it in NOT_READ_BACKS with why it is not a read-back"
              for where, (line, what) in found.items()
              if not where.startswith("lib/deliverylab/readers.py:")
              and where not in NOT_READ_BACKS]
    assert not broken, broken
    stale = sorted(set(NOT_READ_BACKS) - set(found))
    assert not stale, f"NOT_READ_BACKS names reads that are gone: {stale}"


def test_the_read_back_finder_tells_a_consumer_from_a_data_frame():
    """Rule 5: the finder sees an assign and a Read built by hand, not pandas' assign."""
    tree = ast.parse("def a(c, tp):\n    c.assign([tp])\n"
                     "def b(df):\n    return df.assign(x=1)\n"
                     "def d(m):\n    return [history.Read(m.topic(), 0, 0, 'v')]\n"
                     "class E:\n    def f(self, m):\n        return Read('t', 0, 0, None)\n")
    assert list(F.assigns(tree)) == [("a", 2)]
    assert list(F.reads_built(tree)) == [("d", 6), ("E.f", 9)]


# --- rule 6: size and the top level ---------------------------------------------------


@pytest.mark.parametrize("path", sorted(LIB.rglob("*.py")), ids=lambda p: str(p.relative_to(LIB)))
def test_no_module_is_over_650_lines(path: Path):
    """Rule 6: no module of the package is over 650 lines."""
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(LIB)}: {lines} lines; split it by role"


def test_the_top_level_holds_only_the_facade_and_the_vocabulary():
    """Rule 6: the top level holds the facade and the vocabulary the map's table lists."""
    vocabulary = GROUND | {"clients", "workload", "readers", "segments", "nemesis",
                           "schedule", "scenario", "matrix"}
    top = {p.stem for p in LIB.glob("*.py")} - {"__init__"}
    assert top == vocabulary, sorted(top ^ vocabulary)


# --- rule 7: one op log ---------------------------------------------------------------

#: Modules that append JSON lines to a file, or turn Ops into records, not through
#: ``history.py``, each with why. What a process did goes through ``history.OpLog``
#: (one Op a line, written through, on the clock every process shares) and back through
#: ``History.merge_logs``; other lines a kill must not lose (the grader's events, the
#: HTTP service's ledger, a FaultPanel's presses) through ``history.JsonLines`` and
#: ``read_json_lines``. Keyed by module; none today.
NOT_OP_LOGS: dict[str, str] = {}


def test_only_the_op_log_writes_op_logs():
    """Rule 7: no module but history.py appends JSON lines or turns an Op into a record
    and back, but the named NOT_OP_LOGS; a stale entry fails."""
    # A child's log of what it did, in a shape of its own, needs a reader of its own and
    # a clock of its own: three such shapes were the issue. history.OpLog is the one,
    # on history.JsonLines, the one writer of lines a kill must not lose.
    found = F.op_log_writers()
    # the finder sees the ones it must: JsonLines' append and the Op's records
    assert any(w.startswith("JsonLines.append appends") for w in found.get("history", ()))
    assert any(w.startswith("op.to_record()") for w in found["history"])
    broken = [f"{module}: {', '.join(why)}; record a process's ops with history.OpLog and "
              "read them with History.merge_logs, other lines with history.JsonLines and "
              "read_json_lines, or name the module in NOT_OP_LOGS with why it needs neither"
              for module, why in found.items() if module != "history"
              and module not in NOT_OP_LOGS]
    assert not broken, broken
    stale = sorted(set(NOT_OP_LOGS) - set(found))
    assert not stale, f"NOT_OP_LOGS names modules that write no JSON lines: {stale}"


def test_the_op_log_finder_tells_an_appender_from_other_opens_and_writes():
    """Rule 7: the finder sees an append by open or os.open, under any json name, and
    passes a log opened to append where no JSON is made."""
    calls = [n for n in ast.walk(ast.parse(
        'open(p, mode="ab"); open(p, "r"); Path(p).open(); open(p, "w"); path.open("a")\n'
        'os.open(p, os.O_WRONLY | os.O_APPEND); os.open(p, os.O_RDONLY)\n'))
        if isinstance(n, ast.Call)]
    assert [ast.unparse(c) for c in calls if F.appends(c)] == [
        "open(p, mode='ab')", "path.open('a')", "os.open(p, os.O_WRONLY | os.O_APPEND)"]
    tree = ast.parse(
        "import json as j\nimport os\n"
        "def a(p, r):\n    with p.open('a') as out:\n        out.write(j.dumps(r) + '\\n')\n"
        "class B:\n    def c(self, r):\n        line = j.dumps(r).encode()\n"
        "        fd = os.open(self.p, os.O_APPEND | os.O_CREAT)\n        os.write(fd, line)\n"
        "def d(p):\n    return open(p, 'a')\n"  # a child's log: no JSON made here
        "def e(r):\n    return j.dumps(r)\n"
        "def f(op):\n    return op.to_record()\n")
    assert F.json_appends_in(tree) == ["a appends JSON lines to a file (line 4)",
                                       "B.c appends JSON lines to a file (line 9)",
                                       "op.to_record() at line 16"]


# --- rule 8: one kit per chapter ------------------------------------------------------

#: Chapters with no kit, each with why: they run the shared vocabulary alone.
NO_KIT = {"00_tour": "the tour runs the vocabulary alone (dl.Cluster, dl.Nemesis, dl.check)"}


def _chapters() -> dict[str, str]:
    """Each chapter's name -> its topic, the kit's name (``02b_consumer_groups`` ->
    ``consumer_groups``), from the notebooks in labs/, in the course's order."""
    from deliverylab.notebook.chapter import CHAPTER_NAME, chapter_names

    return {name: CHAPTER_NAME.fullmatch(name).group(2) for name in chapter_names(LABS)}


def test_every_chapter_has_one_kit_named_after_it_and_no_flat_module():
    """Rule 8: every chapter in labs/ has one package chapters/<topic>/ (but NO_KIT),
    every such package a chapter, and chapters/ holds no flat module."""
    chapters = _chapters()
    assert len(chapters) >= 10 and "02b_consumer_groups" in chapters  # the reader sees them
    kits = {p.parent.name for p in (LIB / "chapters").glob("*/__init__.py")}
    missing = sorted(f"{name}: no chapters/{topic}/ package; add its kit, or name the "
                     "chapter in NO_KIT with why it needs none"
                     for name, topic in chapters.items()
                     if topic not in kits and name not in NO_KIT)
    assert not missing, missing
    stray = sorted(kits - {topic for name, topic in chapters.items() if name not in NO_KIT})
    assert not stray, f"chapters/ packages no chapter is named after (or in NO_KIT): {stray}"
    flat = sorted(p.name for p in (LIB / "chapters").glob("*.py") if p.name != "__init__.py")
    assert not flat, f"flat modules in chapters/ (a chapter's code goes in its kit): {flat}"
    assert sorted(set(NO_KIT) - set(chapters)) == [], "NO_KIT names a chapter that is gone"


def test_no_kit_exports_the_name_of_one_of_its_modules():
    """Rule 8: a kit's exported names are not its modules' names."""
    # Importing chapters/<topic>/x.py binds `x` on the package: a kit exporting a name `x`
    # too would hand out the module or the function depending on who imported first.
    broken = []
    for init in sorted((LIB / "chapters").glob("*/__init__.py")):
        kit = importlib.import_module(f"deliverylab.chapters.{init.parent.name}")
        modules = {p.stem for p in init.parent.glob("*.py")} - {"__init__"}
        broken += [f"chapters/{init.parent.name}: exports {name!r}, also a module's name"
                   for name in sorted(set(kit.__all__) & modules)]
    assert not broken, broken


def test_a_kit_imports_only_the_kits_of_earlier_chapters():
    """Rule 8: code two chapters share lives in the kit of the one that introduces it; a
    later kit imports it from there, never an earlier kit from a later one."""
    order = {topic: i for i, topic in enumerate(_chapters().values())}

    def kit(module: str) -> int:  # a kit no chapter is named after fails the test above
        return order.get(module.split(".")[1], -1)

    broken = [f"{m} imports {t} (line {line}): a later chapter's kit"
              for m in GRAPH if m.startswith("chapters.")
              for t, line in GRAPH[m] if t.startswith("chapters.") and kit(t) > kit(m)]
    assert not broken, broken


def test_every_notebook_reaches_its_kit_one_way():
    """Rule 8: a notebook imports its own kit, `from deliverylab.chapters import <topic>
    as kit`, and no other chapters/ code by any form; every kit.<n> and dl.<n> it calls
    exists, and the facade exports no chapter code."""
    import deliverylab

    facade = [f"dl.{name} -> {module}" for name, module in
              [*deliverylab._EXPORTS.items(), *deliverylab._SUBMODULES.items()]
              if module.split(".")[0] == "chapters"]
    assert not facade, f"the facade exports chapter code (import the kit instead): {facade}"
    broken = []
    for name, topic in _chapters().items():
        code = F.notebook_code(LABS / f"{name}.ipynb")
        reached = F.chapter_imports(code)
        expected = [] if name in NO_KIT else [f"deliverylab.chapters:{topic} as kit"]
        if reached != expected:
            broken.append(f"{name} reaches chapters/ by {reached}; expected {expected}")
        # ... and every name it calls is there: a `dl.bugs.` left by a merge, or a kit
        # name that became a module's, fails here rather than minutes into a chapter.
        kit = None if name in NO_KIT else importlib.import_module(
            f"deliverylab.chapters.{topic}")
        broken += [f"{name}: kit.{n} is not a name of its kit" for n in
                   sorted(set(re.findall(r"(?<![\w.])kit\.(\w+)", code)))
                   if kit is None or isinstance(getattr(kit, n, None), (ModuleType,
                                                                       type(None)))]
        broken += [f"{name}: dl.{n} is not a name of the facade" for n in
                   sorted(set(re.findall(r"(?<![\w.])dl\.(\w+)", code)))
                   if not hasattr(deliverylab, n)]
    assert not broken, broken


def test_the_notebook_import_finder_sees_every_way_into_chapters():
    """Rule 8: the finder sees the kit line and every other way a notebook could reach
    chapters/ (a module, the package, a dotted import, a string)."""
    code = ("import deliverylab as dl\nfrom deliverylab.chapters import at_most_once as kit\n"
            "from deliverylab import chapters\nimport deliverylab.chapters.kafka_bugs as kb\n"
            "from deliverylab.chapters.transactions.zombie import instance\n"
            "m = importlib.import_module('deliverylab.chapters.side_effects')\n")
    assert F.chapter_imports(code) == [
        "deliverylab.chapters:at_most_once as kit", "deliverylab:chapters as chapters",
        "deliverylab.chapters.kafka_bugs as kb",
        "deliverylab.chapters.transactions.zombie:instance as instance",
        "the string 'deliverylab.chapters.side_effects'"]


# --- rule 9: one way to start a child process ----------------------------------------

#: Functions in lib/ that start a process with ``subprocess.Popen`` themselves, each with
#: why. Keyed "module:qualname".
NOT_CHILDREN = {
    "process.children:start_reaper": "the reaper itself: what Children.start tells about "
                                     "its children",
    "process.children:Children.start": "the one way",
    "cluster.local:LocalBackend._format": "Kafka's storage tool, run to its end and "
                                          "waited for by the caller, before any broker",
    "cluster.local:LocalBackend.launch": "a broker JVM: the Cluster tells the reaper its "
                                         "pid (on_launch) and keeps its own log per node",
    "proxy.proxy:_Child.__init__": "the proxy engine: its stdin and stdout are the command "
                                   "channel, and it exits on its stdin's EOF however this "
                                   "process dies (no reaper needed)",
    "classroom.sizing.measure:Child.__init__": "a measured stack: its stdout is read "
                                               "line by line for the marks the "
                                               "measurement times, and it is waited for",
    "chapters.kafka_bugs.reproductions:java_stale_end_txn": "Kafka's Java producer tool, "
                                                            "its output read to its end "
                                                            "(communicate) within the call",
}


def test_every_child_process_starts_through_children():
    """Rule 9: no function in lib/ calls subprocess.Popen but Children.start and the
    named NOT_CHILDREN; a stale entry fails."""
    # A bare Popen has no process group, no reaper and no log tail in its error: a
    # kernel that dies leaves it running. Children.start is the one place for that.
    found = F.popens()
    assert "process.children:Children.start" in found  # the finder sees the one it must
    broken = [f"{where} (line {line}): starts a process with subprocess.Popen; use "
              "process.children.Children.start, or name it in NOT_CHILDREN with why"
              for where, line in found.items() if where not in NOT_CHILDREN]
    assert not broken, broken
    stale = sorted(set(NOT_CHILDREN) - set(found))
    assert not stale, f"NOT_CHILDREN names functions that start no process: {stale}"


def test_the_popen_finder_sees_every_name_of_popen():
    """Rule 9: the finder sees Popen however imported, and passes run() and others'."""
    src = ("import subprocess\nimport subprocess as sp\nfrom subprocess import Popen as P\n"
           "def a():\n    subprocess.Popen(['x'])\n"
           "class B:\n    def c(self):\n        sp.Popen(['x'])\n"
           "def d():\n    P(['x'])\n"
           "def e():\n    subprocess.run(['x']); other.Popen(['x'])\n")
    assert F.popens_in(ast.parse(src), "m") == {"m:a": 5, "m:B.c": 8, "m:d": 10}
