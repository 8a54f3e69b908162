"""The package's shape, checked: the import rules, the size limit, the one wait, the
one read-back, the one op log.

The rules (docs/whats-here.md says why):
1. The ground vocabulary (errors, values, history, checker, modes, faults, waiting)
   imports only itself: every other module may lean on it, so it leans on nothing.
2. The machinery never imports a face or a chapter kit: ``notebook/``, ``classroom/``,
   ``grade/`` and ``chapters/`` import the machinery, never the other way round.
   ``chapters/`` is imported by the faces and notebooks only (and by tests, benches).
3. No import circle between modules, counting every import: inside functions,
   type-only ones (``if TYPE_CHECKING:``) and the package ``__init__`` an import runs on
   the way (``from ..cluster import ready`` runs ``cluster/__init__``): a circle closed
   by a type hint or a late import is still a circle in the structure. None is allowed.
4. No arrow back up: every import goes down ``LAYERS`` (or stays in its layer), and the
   wings and top-level modules import each other without a circle either.

Plus: no module over 650 lines, no hand-written wait loop (a ``while`` around
``time.sleep``/``time.monotonic``) outside ``waiting.py`` but the named ``NOT_WAITS``,
which do work every round, and no consumer assigned partitions by hand (a read-back of
its own) outside ``readers.py`` but the named ``NOT_READ_BACKS``, in lib, tests and
bench, and no JSON-lines log appended or Op turned into a record by hand outside
``history.py`` (whose ``OpLog`` is every child process's log of its ops) but the named
``NOT_OP_LOGS``; and one kit per chapter: every chapter in ``labs/`` has one package
``chapters/<topic>/`` named after it (but the named ``NO_KIT``), reached from its notebook
one way (``from deliverylab.chapters import <topic> as kit``), and ``chapters/`` holds no
flat module. The graph is read from the source (``ast``), so a test
fails on the line that breaks a rule, before anything runs.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "lib" / "deliverylab"
GROUND = {"errors", "values", "history", "checker", "modes", "faults", "waiting"}
FACES = {"notebook", "classroom", "grade", "chapters"}
MAX_LINES = 650


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _imports(tree: ast.AST, name: str, is_package: bool,
             modules: set[str]) -> set[tuple[str, int]]:
    """The package's modules ``tree`` (module ``name``) imports, with the line: every
    import, in a function or under ``if TYPE_CHECKING:`` too (a function-local import
    is exempt from nothing: it runs when called, and a circle it closes is one), and the
    packages' ``__init__`` each import runs on the way."""
    edges: set[tuple[str, int]] = set()
    for node in ast.walk(tree):  # every node: function bodies and `if TYPE_CHECKING:`
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level:
            base = name.split(".") if name else []
            if not is_package:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            stem = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:  # `from . import jars` imports a module
                sub = f"{stem}.{alias.name}".strip(".")
                targets.append(sub if sub in modules else stem)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "deliverylab"):
            stem = node.module.removeprefix("deliverylab").lstrip(".")
            for alias in node.names:
                sub = f"{stem}.{alias.name}".strip(".")
                targets.append(sub if sub in modules else stem)
        elif isinstance(node, ast.Import):
            targets += [a.name.removeprefix("deliverylab").lstrip(".")
                        for a in node.names if a.name.startswith("deliverylab")]
        for t in targets:
            # Importing `a.b.c` runs `a/__init__` and `a/b/__init__` first: an edge to
            # each, but not to the importer's own packages (already running).
            parts = t.split(".")
            for anc in (".".join(parts[:i]) for i in range(1, len(parts))):
                if anc in modules and not (name == anc or name.startswith(anc + ".")):
                    edges.add((anc, node.lineno))
        edges.update((t, node.lineno) for t in targets if t != name)
    return edges


def _graph() -> dict[str, set[tuple[str, int]]]:
    """Module -> the package's modules it imports (with the line), '' = the facade."""
    modules = {_module_name(p)[0] for p in LIB.rglob("*.py")}
    graph: dict[str, set[tuple[str, int]]] = {}
    for path in LIB.rglob("*.py"):
        name, is_package = _module_name(path)
        graph[name] = _imports(ast.parse(path.read_text(), str(path)), name, is_package,
                               modules)
    return graph


GRAPH = _graph()


def _top(module: str) -> str:
    return module.split(".")[0]


def test_the_graph_sees_the_package():
    # A reader that found nothing would pass every rule below.
    assert {"cluster.cluster", "nemesis", "proxy.proxy", "spark.inspector"} <= set(GRAPH)
    assert any(t == "cluster.ready" for t, _ in GRAPH["nemesis"])


def test_the_ground_vocabulary_imports_only_itself():
    broken = [f"{m} imports {t} (line {line})" for m in GROUND
              for t, line in GRAPH[m] if t not in GROUND]
    assert not broken, broken


def test_the_machinery_never_imports_a_face_or_a_chapter_kit():
    machinery = [m for m in GRAPH if m and _top(m) not in FACES]
    broken = [f"{m} imports {t} (line {line})" for m in machinery
              for t, line in GRAPH[m] if _top(t) in FACES]
    assert not broken, broken


def test_chapter_kits_are_imported_by_kits_and_graders_only():
    broken = [f"{m} imports {t} (line {line})" for m in GRAPH if m
              for t, line in GRAPH[m]
              if _top(t) == "chapters" and _top(m) not in {"chapters", "grade"}]
    assert not broken, broken


def _circles(graph: dict[str, set[tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _ in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_between_modules():
    # Zero, with no allow-list: a module that needs only the shape of one above it names
    # that shape as a Protocol of its own; shared names move down into a small module.
    # The facade ('') imports nothing at import time; packages' __init__ re-exports are
    # modules too, so proxy/__init__ -> proxy.proxy -> proxy (a circle) would show.
    circles = _circles(GRAPH)
    assert not circles, circles


def test_a_type_only_import_and_one_in_a_function_count():
    # `if TYPE_CHECKING:` imports never run, but a circle they close is still a circle;
    # `from ..c import d` also runs c/__init__ (p/__init__ is the importer's own).
    tree = ast.parse("from typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from .b import B\n"
                     "def f():\n    from ..c import d\n")
    assert _imports(tree, "p.a", False, {"p", "p.a", "p.b", "c", "c.d"}) == {
        ("p.b", 3), ("c", 5), ("c.d", 5)}


def test_a_circle_through_a_package_init_counts():
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
    graph = {m: _imports(ast.parse(src), m, pkg, modules)
             for m, (src, pkg) in sources.items()}
    assert _circles(graph) == [["cluster", "cluster.cluster", "connect", "connect.connect"]]


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
    units = {_top(m) for m in GRAPH if m}
    named = [u for _, layer in LAYERS for u in layer]
    assert len(named) == len(set(named)), "a unit named in two layers"
    assert set(named) == units, sorted(set(named) ^ units)


def test_no_arrow_back_up():
    # cluster/ importing connect/ (Cluster.connect) was one: the brokers below, what
    # runs on them above. A lower layer that needs a shape of a higher one names it as
    # a Protocol of its own (cluster.Stops, what the cluster stops with itself).
    broken = [f"{m} ({LAYERS[LAYER_OF[_top(m)]][0]}) imports {t} "
              f"({LAYERS[LAYER_OF[_top(t)]][0]}), line {line}"
              for m in GRAPH if m for t, line in GRAPH[m]
              if t and LAYER_OF[_top(t)] > LAYER_OF[_top(m)]]
    assert not broken, broken


def test_the_map_draws_the_layers_the_test_keeps():
    # docs/whats-here.md rule 3 lists the layers bottom up, `;` between two: the same.
    text = (LIB.parents[1] / "docs" / "whats-here.md").read_text()
    order = " ".join(text.split("never above:", 1)[1].split(". A module", 1)[0].split())
    groups = order.split(";")
    assert len(groups) == len(LAYERS) and "the ground vocabulary" in groups[0], order
    assert [set(re.findall(r"`(\w+)`", g)) for g in groups[1:]] == [
        set(units) for _, units in LAYERS[1:]], order


def test_no_import_circle_between_wings():
    # Inside one layer, wings may lean on each other, one way: no two wings (or
    # top-level modules) import each other, even through modules that do not.
    wings = {_top(m): set() for m in GRAPH if m}
    for m in GRAPH:
        for t, line in GRAPH[m]:
            if m and t and _top(t) != _top(m):
                wings[_top(m)].add((_top(t), line))
    circles = _circles(wings)
    assert not circles, circles


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {("b", 1)}, "b": {("c", 1)}, "c": {("a", 1)}, "d": set()}) == [
        ["a", "b", "c"]]


@pytest.mark.parametrize("path", sorted(LIB.rglob("*.py")), ids=lambda p: str(p.relative_to(LIB)))
def test_no_module_is_over_650_lines(path: Path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(LIB)}: {lines} lines; split it by role"


#: Loops around time.sleep/time.monotonic that are not waits, each with why: they do
#: work every round (read records, consume, drive a producer, kill), which no probe of
#: ``waiting.wait_until`` should hide. Keyed "module:function".
NOT_WAITS = {
    "chapters.at_least_once.autocommit:crash_instance": "consumes until it holds a whole "
                                                        "batch",
    "chapters.at_least_once.autocommit:_successor": "processes records until the end "
                                                    "offset",
    "chapters.exactly_once_sources.window:stream": "paces a writer, a chunk per pace_s: "
                                                   "awaits nothing",
    "chapters.transactions.zombie:instance": "the zombie's consume-transform-produce loop",
    "chapters.consumer_groups.rebalance:stall_in_group": "drives the producer at its rate "
                                                         "through the stall",
    "chapters.consumer_groups.rebalance:_loop": "a group member's consume loop (its stall "
                                                "is the fault)",
    "classroom.hub.users:sweep": "SIGKILLs the student's processes every round until none is left",
    "classroom.hub.__main__:main": "serves until the hub ends or Ctrl-C: no deadline, "
                                   "nothing awaited",
    "classroom.hub.client:execute": "receives the kernel's messages until reply and idle",
    "cluster.ready:read_back": "reads records until the token (one probe of a ready step)",
    "notebook.progress:_tick": "a ticker that shows the seconds elapsed until stopped",
    "readers:_drain": "reads records until every partition's end (the one read-back)",
    "readers:peek": "reads records for a few seconds",
    "services.instance:loop": "a service's work loop, until it is stopped",
    "workload:run": "the pipeline's consume-process-produce loop",
}
WAIT_CALLS = {"time.sleep", "time.monotonic", "sleep", "monotonic"}


def _loops_in(node: ast.AST, where: str, function: str, found: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _loops_in(child, where, child.name, found)
            continue
        if isinstance(child, ast.While) and any(
                isinstance(c, ast.Call) and ast.unparse(c.func) in WAIT_CALLS
                for c in ast.walk(child)):
            found.setdefault(f"{where}:{function}", child.lineno)
        _loops_in(child, where, function, found)


def _wait_loops() -> dict[str, int]:
    """``module:function`` -> line of each ``while`` loop calling sleep or monotonic."""
    found: dict[str, int] = {}
    for path in sorted(LIB.rglob("*.py")):
        _loops_in(ast.parse(path.read_text(), str(path)), _module_name(path)[0], "<module>",
                  found)
    return found


def test_every_wait_goes_through_the_one_wait():
    # A hand-written `while ... sleep` drifts from the one wait: it returns None on
    # timeout, forgets to look whether the process died, or does not say what it
    # waited for. waiting.wait_until is the one place such a loop is written.
    loops = _wait_loops()
    assert "waiting:wait_until" in loops  # the finder sees the one it must
    broken = [f"{where} (line {line}): a hand-written wait loop; use "
              "waiting.wait_until, or name it in NOT_WAITS with why it is not a wait"
              for where, line in loops.items()
              if where != "waiting:wait_until" and where not in NOT_WAITS]
    assert not broken, broken
    stale = sorted(set(NOT_WAITS) - set(loops))
    assert not stale, f"NOT_WAITS names loops that are gone: {stale}"


#: Consumers assigned partitions by hand (``consumer.assign([...])``: no group) outside
#: ``readers.py``, each with why it is not a read-back. A topic read back to its end goes
#: through ``readers.read_back``/``read_records``, so it either ends or raises
#: ``ReadTimeout``. Keyed "file:function", the file relative to the repository.
NOT_READ_BACKS = {
    "lib/deliverylab/cluster/ready.py:read_back": "a readiness probe: reads its own "
                                                 "token, asked again by the wait",
    "lib/deliverylab/chapters/at_least_once/autocommit.py:_successor":
        "the group's successor, processing from its committed offset: what chapter 02 "
        "shows",
    "lib/deliverylab/chapters/cost_of_guarantees/costs.py:latency":
        "times each record from the topic's end as it arrives: a measurement",
}


def _assigns_in(node: ast.AST, where: str, function: str, found: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _assigns_in(child, where, child.name, found)
            continue
        # Consumer.assign takes one list; pandas' DataFrame.assign takes keywords.
        if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                and child.func.attr == "assign" and len(child.args) == 1
                and not child.keywords):
            found.setdefault(f"{where}:{function}", child.lineno)
        _assigns_in(child, where, function, found)


def test_every_read_back_goes_through_readers():
    root = LIB.parents[1]
    found: dict[str, int] = {}
    for folder in ("lib", "tests", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            _assigns_in(ast.parse(path.read_text(), str(path)),
                        str(path.relative_to(root)), "<module>", found)
    assert "lib/deliverylab/readers.py:_drain" in found  # the finder sees the one it must
    broken = [f"{where} (line {line}): a consumer assigned by hand; read the topic back "
              "with readers.read_back or read_records, or name it in NOT_READ_BACKS "
              "with why it is not a read-back"
              for where, line in found.items()
              if not where.startswith("lib/deliverylab/readers.py:")
              and where not in NOT_READ_BACKS]
    assert not broken, broken
    stale = sorted(set(NOT_READ_BACKS) - set(found))
    assert not stale, f"NOT_READ_BACKS names reads that are gone: {stale}"


def test_the_top_level_holds_only_the_facade_and_the_vocabulary():
    vocabulary = GROUND | {"clients", "workload", "readers", "segments", "nemesis",
                           "schedule", "scenario", "matrix"}
    top = {p.stem for p in LIB.glob("*.py")} - {"__init__"}
    assert top == vocabulary, sorted(top ^ vocabulary)


#: Chapters with no kit, each with why: they run the shared vocabulary alone.
NO_KIT = {"00_tour": "the tour runs the vocabulary alone (dl.Cluster, dl.Nemesis, dl.check)"}
LABS = LIB.parents[1] / "labs"
KIT_IMPORT = re.compile(r"^from deliverylab\.chapters import (\w+) as kit\b", re.M)


def _chapters() -> dict[str, str]:
    """Each chapter's name -> its topic, the kit's name (``02b_consumer_groups`` ->
    ``consumer_groups``), from the notebooks in labs/."""
    from deliverylab.notebook.chapter import CHAPTER_NAME, chapter_names

    return {name: CHAPTER_NAME.fullmatch(name).group(2) for name in chapter_names(LABS)}


def _code(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_every_chapter_has_one_kit_named_after_it_and_no_flat_module():
    # One kit per chapter, so a chapter's code is found from its name: chapters/<topic>/.
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
    # Importing chapters/<topic>/x.py binds `x` on the package: a kit exporting a name `x`
    # too would hand out the module or the function depending on who imported first.
    import importlib

    broken = []
    for init in sorted((LIB / "chapters").glob("*/__init__.py")):
        kit = importlib.import_module(f"deliverylab.chapters.{init.parent.name}")
        modules = {p.stem for p in init.parent.glob("*.py")} - {"__init__"}
        broken += [f"chapters/{init.parent.name}: exports {name!r}, also a module's name"
                   for name in sorted(set(kit.__all__) & modules)]
    assert not broken, broken


def test_every_notebook_reaches_its_kit_one_way():
    # `import deliverylab as dl` for the vocabulary, `from deliverylab.chapters import
    # <topic> as kit` for the chapter's own code; no chapter's code is a dl. name.
    import importlib
    from types import ModuleType

    import deliverylab

    facade = [f"dl.{name} -> {module}" for name, module in
              [*deliverylab._EXPORTS.items(), *deliverylab._SUBMODULES.items()]
              if module.split(".")[0] == "chapters"]
    assert not facade, f"the facade exports chapter code (import the kit instead): {facade}"
    broken = []
    for name, topic in _chapters().items():
        code = _code(LABS / f"{name}.ipynb")
        kits = KIT_IMPORT.findall(code)
        expected = [] if name in NO_KIT else [topic]
        if kits != expected:
            broken.append(f"{name} imports kits {kits}; expected {expected}")
        others = len(re.findall(r"deliverylab\.chapters", code)) - len(kits)
        if others:
            broken.append(f"{name} reaches chapters/ {others} other way(s) besides `kit`")
        # ... and every name it calls is there: a `dl.bugs.` left by a merge, or a kit
        # name that became a module's, fails here rather than minutes into a chapter.
        kit = importlib.import_module(f"deliverylab.chapters.{kits[0]}") if kits else None
        broken += [f"{name}: kit.{n} is not a name of its kit" for n in
                   sorted(set(re.findall(r"(?<![\w.])kit\.(\w+)", code)))
                   if kit is None or isinstance(getattr(kit, n, None), (ModuleType,
                                                                       type(None)))]
        broken += [f"{name}: dl.{n} is not a name of the facade" for n in
                   sorted(set(re.findall(r"(?<![\w.])dl\.(\w+)", code)))
                   if not hasattr(deliverylab, n)]
    assert not broken, broken


#: Modules that append JSON lines to a file but not through ``history.py``, each with
#: why. What a process did goes through ``history.OpLog`` (one Op a line, written
#: through, on the clock every process shares) and back through ``History.merge_logs``;
#: other lines a kill must not lose (the grader's events, the HTTP service's ledger)
#: through ``history.JsonLines`` and ``read_json_lines``. Keyed by module.
NOT_OP_LOGS = {
    "notebook.record": "a FaultPanel's presses, for the tests that drive a chapter: what "
                       "was shown, not what a client did",
}


def _appends(call: ast.Call) -> bool:
    """``open(p, "a")``, ``path.open("ab")``, ``open(p, mode="a")``: a file opened to append."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
        call.func, "id", "")
    if name != "open":
        return False
    # open(path, mode) or path.open(mode); os.open's flags are O_APPEND, seen apart.
    positional = call.args[1:2] if isinstance(call.func, ast.Name) else call.args[:1]
    modes = [*positional, *(k.value for k in call.keywords if k.arg == "mode")]
    return any(isinstance(m, ast.Constant) and isinstance(m.value, str) and "a" in m.value
               for m in modes)


def _writes_dumps(call: ast.Call) -> bool:
    """``out.write(json.dumps(record) + "\\n")``: a JSON document written to a file."""
    return (isinstance(call.func, ast.Attribute) and call.func.attr == "write"
            and any(isinstance(n, ast.Call) and ast.unparse(n.func) in ("json.dumps", "dumps")
                    for arg in call.args for n in ast.walk(arg)))


def _op_log_writers() -> dict[str, list[str]]:
    """module -> why it writes an op log, or JSON lines that may be one: a class or
    function that opens a file to append and writes ``json.dumps`` into it, or Ops
    turned into records or back by hand (``to_record``, ``Op.from_record``)."""
    found: dict[str, list[str]] = {}
    for path in sorted(LIB.rglob("*.py")):
        why: list[str] = []
        for scope in ast.parse(path.read_text(), str(path)).body:
            calls = [n for n in ast.walk(scope) if isinstance(n, ast.Call)]
            if any(map(_appends, calls)) and any(map(_writes_dumps, calls)):
                why.append(f"appends JSON lines to a file (line {scope.lineno})")
            why += [f"{ast.unparse(c.func)}() at line {c.lineno}" for c in calls
                    if ast.unparse(c.func).endswith((".to_record", "Op.from_record"))]
        if why:
            found[_module_name(path)[0]] = why
    return found


def test_only_the_op_log_writes_op_logs():
    # A child's log of what it did, in a shape of its own, needs a reader of its own and
    # a clock of its own: three such shapes were the issue. history.OpLog is the one,
    # on history.JsonLines, the one writer of lines a kill must not lose.
    found = _op_log_writers()
    assert "history" in found  # the finder sees the one it must (its to_record)
    broken = [f"{module}: {', '.join(why)}; record a process's ops with history.OpLog and "
              "read them with History.merge_logs, other lines with history.JsonLines and "
              "read_json_lines, or name the module in NOT_OP_LOGS with why it needs neither"
              for module, why in found.items() if module != "history"
              and module not in NOT_OP_LOGS]
    assert not broken, broken
    # ... and every appender it must: each module named below is found, or is stale.
    stale = sorted(set(NOT_OP_LOGS) - set(found))
    assert not stale, f"NOT_OP_LOGS names modules that write no JSON lines: {stale}"


def test_the_op_log_finder_tells_an_appender_from_other_opens_and_writes():
    tree = ast.parse('with path.open("a") as out:\n    out.write(json.dumps(r) + "\\n")\n'
                     'open(p, mode="ab"); open(p, "r"); Path(p).open(); open(p, "w")\n'
                     'out.write(text); key = json.dumps(k)\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert sorted(ast.unparse(c.func) for c in calls if _appends(c)) == ["open", "path.open"]
    assert [ast.unparse(c) for c in calls if _writes_dumps(c)] == [
        "out.write(json.dumps(r) + '\\n')"]
