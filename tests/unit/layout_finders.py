"""What ``tests/unit/test_layout.py`` reads from the source: the import graph, its
circles, hand-written wait loops, hand-made read-backs, JSON-lines appenders, the
imports of a notebook, and the processes started by hand.

Why apart from the test: these finders are code with tests of their own (each is run on
hand-written source in ``test_layout.py``, so a finder that finds nothing cannot pass a
rule unnoticed), while the test module holds the rules, their allow-lists and the layers
the map draws. Everything here is read with ``ast``: nothing is imported or run, so a rule
fails on the line that breaks it, before anything runs.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib" / "deliverylab"


def module_name(path: Path) -> tuple[str, bool]:
    """``lib/deliverylab/cluster/ready.py`` -> (``cluster.ready``, not a package)."""
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def top(module: str) -> str:
    """The wing (folder) or top-level module a module belongs to."""
    return module.split(".")[0]


# --- the import graph ---------------------------------------------------------------


def imports(tree: ast.AST, name: str, is_package: bool,
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


def graph() -> dict[str, set[tuple[str, int]]]:
    """Module -> the package's modules it imports (with the line), '' = the facade."""
    modules = {module_name(p)[0] for p in LIB.rglob("*.py")}
    out: dict[str, set[tuple[str, int]]] = {}
    for path in LIB.rglob("*.py"):
        name, is_package = module_name(path)
        out[name] = imports(ast.parse(path.read_text(), str(path)), name, is_package, modules)
    return out


def circles(graph: dict[str, set[tuple[str, int]]]) -> list[list[str]]:
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


# --- calls, named as the module spells them -----------------------------------------

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def scoped(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every node with the qualified name of the function or class it is in
    (``Proxy.stop``, ``crash_instance.loop``; ``<module>`` at the top)."""
    def walk(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, DEFS):
                inner = child.name if scope == "<module>" else f"{scope}.{child.name}"
                yield inner, child
                yield from walk(child, inner)
            else:
                yield scope, child
                yield from walk(child, scope)

    yield from walk(tree, "<module>")


def aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> what it imports: ``import time as t`` -> {t: time}, ``from time
    import sleep as nap`` -> {nap: time.sleep}; a relative import keeps its dots."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:  # `import a.b` binds `a`; `import a.b as c` binds a.b
                first = a.name.split(".")[0]
                out[a.asname or first] = a.name if a.asname else first
        elif isinstance(node, ast.ImportFrom):
            stem = "." * node.level + (node.module or "")
            for a in node.names:
                out[a.asname or a.name] = f"{stem}.{a.name}" if node.module else stem + a.name
    return out


def called(call: ast.Call, names: dict[str, str]) -> str:
    """The dotted name a call calls, its first part resolved through ``names``
    (:func:`aliases`): ``nap(1)`` -> ``time.sleep``; ``self._stop.wait`` as written."""
    parts: list[str] = []
    node: ast.AST = call.func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ".".join(["?", *reversed(parts)])
    return ".".join([names.get(node.id, node.id), *reversed(parts)])


def calls_in(node: ast.AST) -> Iterator[ast.Call]:
    """The calls in ``node`` (its test, body and else), not those of a function or class
    defined inside it: a loop that defines a callback does not run it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, DEFS):
            continue
        if isinstance(child, ast.Call):
            yield child
        yield from calls_in(child)


# --- rule 4: hand-written wait loops ------------------------------------------------

#: A pause: the loop sleeps between two looks.
PAUSES = {"time.sleep", "asyncio.sleep"}
#: A clock: the loop measures how long it has gone on (a deadline by hand).
CLOCKS = {"time.monotonic", "time.monotonic_ns", "time.time", "time.time_ns",
          "time.perf_counter", "time.perf_counter_ns"}


def waits_in(call: ast.Call, names: dict[str, str]) -> str | None:
    """What makes ``call`` part of a wait loop, or None: a pause (``time.sleep``, under
    any name it was imported as; an ``Event``/``Condition``/``Popen`` ``.wait`` given a
    timeout, a sleep that can be woken), or a clock (``time.monotonic``, ``time.time``,
    ``perf_counter``; a :class:`~deliverylab.waiting.Deadline`'s ``expired``/``left``)."""
    name = called(call, names)
    if name in PAUSES | CLOCKS:
        return f"{name}()"
    attr = name.rsplit(".", 1)[-1]
    if attr == "wait" and "." in name and (call.args or any(
            k.arg == "timeout" for k in call.keywords)):
        return f"{name}(timeout)"
    if attr in ("expired", "left") and "." in name:
        return f"{name}()"
    return None


def wait_loops_in(tree: ast.AST, where: str) -> dict[str, tuple[int, str]]:
    """``where:qualname`` -> (line, why) of each wait loop in each function of
    ``tree`` (the second and later ones of a function keyed ``where:qualname#2`` ...,
    so an allowed first loop never hides another): a ``while`` loop that pauses or
    reads a clock (:func:`waits_in`), or a ``for`` loop that sleeps (a counted poll,
    ``for _ in range(50): ... time.sleep(.1)``). A ``for`` loop that only reads a clock
    (one deadline over several joins) or waits on each of several handles in turn
    (``send.wait(10)``) is no poll."""
    names = aliases(tree)
    found: dict[str, tuple[int, str]] = {}
    seen: dict[str, int] = {}
    for scope, node in scoped(tree):
        if isinstance(node, ast.While):
            why = [w for c in calls_in(node) if (w := waits_in(c, names))]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            why = [f"{n}()" for c in calls_in(node) if (n := called(c, names)) in PAUSES]
        else:
            continue
        if why:
            kind = type(node).__name__.lower()
            key = f"{where}:{scope}"
            seen[key] = seen.get(key, 0) + 1
            found[key if seen[key] == 1 else f"{key}#{seen[key]}"] = (
                node.lineno, f"{kind} around {', '.join(sorted(set(why)))}")
    return found


def wait_loops() -> dict[str, tuple[int, str]]:
    """:func:`wait_loops_in` over the package, keyed ``module:qualname``."""
    found: dict[str, tuple[int, str]] = {}
    for path in sorted(LIB.rglob("*.py")):
        found.update(wait_loops_in(ast.parse(path.read_text(), str(path)),
                                   module_name(path)[0]))
    return found


#: The folders outside the package rule 4 reads too: the tests and the benches wait for
#: the same things the package does (a process to end, a port to answer, a leader).
OUTSIDE_LIB = ("tests", "bench")


def wait_loops_outside_lib(root: Path = ROOT) -> dict[str, tuple[int, str]]:
    """:func:`wait_loops_in` over every file of ``root``'s tests/ and bench/, at any
    depth, keyed ``path:qualname`` with the path from ``root``
    (``tests/unit/notebook/test_stream.py:_Workload.run``): they are no modules of the
    package, and two test files may share a name."""
    found: dict[str, tuple[int, str]] = {}
    for folder in OUTSIDE_LIB:
        for path in sorted((root / folder).rglob("*.py")):
            found.update(wait_loops_in(ast.parse(path.read_text(), str(path)),
                                       path.relative_to(root).as_posix()))
    return found


# --- rule 5: read-backs made by hand ------------------------------------------------


def assigns(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(qualname, line) of each consumer assigned partitions by hand,
    ``consumer.assign([...])``: no group, a read of its own. pandas' ``DataFrame.assign``
    takes keywords, so a call with one positional argument and no keyword is a consumer's."""
    for scope, node in scoped(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "assign" and len(node.args) == 1
                and not node.keywords):
            yield scope, node.lineno


def reads_built(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(qualname, line) of each ``Read(...)`` built by hand: the checker's input, which
    a module that consumes a topic back for a check must make."""
    for scope, node in scoped(tree):
        if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id == "Read")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "Read")):
            yield scope, node.lineno


# --- rule 7: JSON lines appended by hand --------------------------------------------


def appends(call: ast.Call) -> bool:
    """A file opened to append: ``open(p, "a")``, ``path.open("ab")``, ``open(p,
    mode="a")``, or ``os.open(p, ... | os.O_APPEND)``."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
        call.func, "id", "")
    if name != "open":
        return False
    if ast.unparse(call.func) == "os.open":
        return any(isinstance(n, (ast.Attribute, ast.Name))
                   and (getattr(n, "attr", None) or getattr(n, "id", None)) == "O_APPEND"
                   for arg in call.args[1:] for n in ast.walk(arg))
    # open(path, mode) or path.open(mode)
    positional = call.args[1:2] if isinstance(call.func, ast.Name) else call.args[:1]
    modes = [*positional, *(k.value for k in call.keywords if k.arg == "mode")]
    return any(isinstance(m, ast.Constant) and isinstance(m.value, str) and "a" in m.value
               for m in modes)


def dumps(call: ast.Call, names: dict[str, str]) -> bool:
    """``json.dumps(...)`` or ``json.dump(..., f)``, under any name."""
    return called(call, names) in ("json.dumps", "json.dump")


def json_appends_in(tree: ast.AST) -> list[str]:
    """Why ``tree`` writes an op log, or JSON lines that may be one: a function that
    opens a file to append and makes JSON in it (``json.dumps``, however the line then
    reaches the file: ``write``, ``os.write``), or Ops turned into records or back by
    hand (``to_record``, ``Op.from_record``)."""
    names = aliases(tree)
    by_scope: dict[str, list[ast.Call]] = {}
    for scope, node in scoped(tree):
        if isinstance(node, ast.Call):
            by_scope.setdefault(scope, []).append(node)
    why: list[str] = []
    for scope, calls in by_scope.items():
        if any(map(appends, calls)) and any(dumps(c, names) for c in calls):
            line = min(c.lineno for c in calls if appends(c))
            why.append(f"{scope} appends JSON lines to a file (line {line})")
        why += [f"{ast.unparse(c.func)}() at line {c.lineno}" for c in calls
                if ast.unparse(c.func).endswith((".to_record", "Op.from_record"))]
    return why


def op_log_writers() -> dict[str, list[str]]:
    """:func:`json_appends_in` over the package: module -> why."""
    found: dict[str, list[str]] = {}
    for path in sorted(LIB.rglob("*.py")):
        if why := json_appends_in(ast.parse(path.read_text(), str(path))):
            found[module_name(path)[0]] = why
    return found


# --- rule 8: how a notebook reaches chapters/ ---------------------------------------


def notebook_code(notebook: Path) -> str:
    """A notebook's code cells, one after another (magics and shell lines left out)."""
    cells = json.loads(notebook.read_text())["cells"]
    return "\n".join(
        "\n".join(line for line in "".join(c["source"]).splitlines()
                  if not line.lstrip().startswith(("%", "!")))
        for c in cells if c["cell_type"] == "code")


def chapter_imports(code: str) -> list[str]:
    """Every import in ``code`` that reaches ``deliverylab.chapters``, as
    ``module:name as bound`` (``deliverylab.chapters:at_most_once as kit``), and
    ``import_module`` calls that name it, whatever the form."""
    out: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if (node.module.startswith("deliverylab.chapters")
                        or (node.module == "deliverylab" and a.name == "chapters")):
                    out.append(f"{node.module}:{a.name} as {a.asname or a.name}")
        elif isinstance(node, ast.Import):
            out += [f"{a.name} as {a.asname or a.name}" for a in node.names
                    if a.name.startswith("deliverylab.chapters")]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                "deliverylab.chapters" in node.value):
            out.append(f"the string {node.value!r}")
    return out


# --- rule 9: child processes started by hand ----------------------------------------


def popens_in(tree: ast.AST, where: str) -> dict[str, int]:
    """``where:qualname`` -> line of each function of ``tree`` that calls
    ``subprocess.Popen`` (under any name it was imported as)."""
    names = aliases(tree)
    return {f"{where}:{scope}": node.lineno for scope, node in scoped(tree)
            if isinstance(node, ast.Call) and called(node, names) == "subprocess.Popen"}


def popens() -> dict[str, int]:
    """:func:`popens_in` over the package, keyed ``module:qualname``."""
    found: dict[str, int] = {}
    for path in sorted(LIB.rglob("*.py")):
        found.update(popens_in(ast.parse(path.read_text(), str(path)), module_name(path)[0]))
    return found
