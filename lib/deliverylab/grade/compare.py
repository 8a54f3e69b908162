"""After a passing grade: the lab's own loop, and what the student's does differently.

A pass says the student's code survived every fault the grader threw at it; it does not
show the shape a reader would carry into a service. So once every cell of a whole grade
passed, the grade shows the exercise's reference (``solutions/NN_name/reference.py``,
kept out of ``labs/`` until then) and a short note on how the two differ where delivery
is decided: the settings each hands the clients (its ``*_SETTINGS`` dictionaries), the
client, database and service calls each makes, the errors each catches, and the SQL
statements each runs. Read from both sources with ``ast``, nothing run: a note, not a
verdict -- both passed, and another correct shape is no mistake.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .exercises import Exercise

#: The calls that decide delivery, and what each does for it (the note's words).
CALLS = {
    "consume": "fetches a batch",
    "poll": "fetches one message",
    "produce": "writes output",
    "flush": "waits for the output's delivery reports",
    "commit": "commits offsets or a database transaction",
    "store_offsets": "stores offsets for auto-commit to commit",
    "position": "reads the consumer's positions",
    "committed": "reads the group's committed offsets",
    "seek": "rewinds the consumer",
    "begin_transaction": "opens a Kafka transaction",
    "send_offsets_to_transaction": "commits the input offsets inside the transaction",
    "commit_transaction": "commits the Kafka transaction",
    "abort_transaction": "aborts the Kafka transaction",
    "txn_requires_abort": "tells an abortable error from a fatal one",
    "rollback": "undoes a database transaction",
    "execute": "runs a SQL statement",
    "executemany": "runs a SQL statement per row",
    "pay": "calls the payment service",
}
#: A SQL statement's shape: its verb and the words that change what a repeat does.
_SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|BEGIN|COMMIT|ROLLBACK|REPLACE)"
                  r"\b", re.I)
_SQL_MODIFIERS = ("OR IGNORE", "OR REPLACE", "ON CONFLICT", "IMMEDIATE", "EXCLUSIVE",
                  "IF NOT EXISTS", "RETURNING")


@dataclass
class Shape:
    """What one solution file does where delivery is decided, read from its source."""

    settings: dict[str, object] = field(default_factory=dict)
    calls: set[str] = field(default_factory=set)
    catches: set[str] = field(default_factory=set)
    sql: set[str] = field(default_factory=set)
    with_block: bool = False


def shape_of(source: str) -> Shape:
    """The :class:`Shape` of a solution's source (it has compiled: the grade ran it)."""
    tree = ast.parse(source)
    shape = Shape()
    for node in tree.body:  # module-level FOO_SETTINGS = {...}
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            if any(isinstance(t, ast.Name) and t.id.endswith("SETTINGS") for t in node.targets):
                for k, v in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                        shape.settings[str(k.value)] = v.value
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in CALLS:
                shape.calls.add(node.func.attr)
        elif isinstance(node, ast.ExceptHandler):
            caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            shape.catches.update(ast.unparse(t) for t in caught if t is not None)
            if node.type is None:
                shape.catches.add("everything (a bare except)")
        elif isinstance(node, ast.With):
            shape.with_block |= any(isinstance(i.context_expr, ast.Name) for i in node.items)
    for sql in _statements(tree):
        if m := _SQL.match(sql):
            text = " ".join(sql.upper().split())
            shape.sql.add(" ".join([m.group(1).upper(), *[w for w in _SQL_MODIFIERS
                                                           if w in text]]))
    return shape


#: The calls whose first argument is a SQL statement (sqlite3's, and the grader's db).
_EXECUTES = ("execute", "executemany", "executescript")


def _statements(tree: ast.AST) -> list[str]:
    """The SQL a solution runs: the first argument of each ``execute``-like call, as a
    literal, an f-string's literal parts, or a name assigned a literal anywhere in the
    file. Only those: a docstring or a message that begins "Begin ..." or "Select ..."
    is no statement."""
    named: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    named.setdefault(target.id, []).append(node.value.value)
    out: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _EXECUTES and node.args):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            out.append(arg.value)
        elif isinstance(arg, ast.JoinedStr):
            out.append("".join(v.value for v in arg.values if isinstance(v, ast.Constant)))
        elif isinstance(arg, ast.Name):
            out += named.get(arg.id, [])
    return out


def _setting(shape: Shape, key: str) -> str:
    return repr(shape.settings[key]) if key in shape.settings else "not set (the lab's)"


def differences(yours: Shape, ours: Shape) -> list[str]:
    """How ``yours`` differs from ``ours``, one line each (none: the same calls)."""
    lines = []
    for key in sorted(yours.settings.keys() | ours.settings.keys()):
        if (key in yours.settings, yours.settings.get(key)) != (
                key in ours.settings, ours.settings.get(key)):
            lines.append(f"setting {key}: yours {_setting(yours, key)}, "
                         f"ours {_setting(ours, key)}")
    for name in CALLS:  # in the table's order: the loop's order, roughly
        if name in ours.calls and name not in yours.calls:
            lines.append(f"ours calls {name}(), which {CALLS[name]}; yours does not")
        elif name in yours.calls and name not in ours.calls:
            lines.append(f"yours calls {name}(), which {CALLS[name]}; ours does not")
    for caught in sorted(ours.catches - yours.catches):
        lines.append(f"ours catches {caught}; yours does not")
    for caught in sorted(yours.catches - ours.catches):
        lines.append(f"yours catches {caught}; ours does not")
    for stmt in sorted(ours.sql - yours.sql):
        lines.append(f"ours runs SQL {stmt}; yours does not")
    for stmt in sorted(yours.sql - ours.sql):
        lines.append(f"yours runs SQL {stmt}; ours does not")
    if yours.with_block != ours.with_block:
        who = "ours" if ours.with_block else "yours"
        lines.append(f"{who} opens its database transaction with a `with` block")
    return lines


def lab_loop(ex: Exercise, solution: Path) -> str:
    """The text shown after a passing grade: the reference, and the differences."""
    reference = ex.reference
    where = f"solutions/{reference.parent.name}/{reference.name}"
    if not reference.is_file():  # the lab image ships labs/, not solutions/
        return (f"Every cell passed. The lab's own {ex.function}() is {where} in the "
                "course's repository (this installation has no solutions/).")
    ours = reference.read_text(encoding="utf-8")
    yours = solution.read_text(encoding="utf-8")
    head = (f"Every cell passed. The lab's own {ex.function}() ({where}), the code to "
            "carry into a service:")
    rule = "-" * 88
    if yours.strip() == ours.strip():
        return f"{head}\n{rule}\n(the file you graded is this one)\n{rule}"
    found = differences(shape_of(yours), shape_of(ours))
    note = ("\n".join(f"  - {line}" for line in found) if found else
            "  - the same settings and calls as ours: the difference is in how they are "
            "arranged")
    return (f"{head}\n{rule}\n{ours.rstrip()}\n{rule}\n"
            f"What yours does differently (both passed: a note, not a verdict):\n{note}")
