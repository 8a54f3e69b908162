"""Bad student code named first: one line, in well under two seconds, and no run.

A file that does not compile, lacks the exercise's function or takes the wrong
arguments used to start a cluster, run every fault and report a delivery property
failing with a hint about commits, for code that never ran. This reads the file
without running it (``compile`` and the syntax tree: importing would execute the
student's module-level code in the grader), so the student reads the real mistake.
"""

from __future__ import annotations

import ast
from pathlib import Path


def problem(path: Path, function: str, params: tuple[str, ...]) -> str | None:
    """One line ``FILE:LINE: what is wrong`` if ``path`` cannot be graded, else None.

    ``params`` are the contract's arguments: the function must accept that many
    positional arguments (other names are fine, and so are ``*args`` or defaults).
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: cannot be read ({exc})"
    try:
        tree = compile(source, str(path), "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        compile(tree, str(path), "exec", dont_inherit=True)  # what the AST alone lets by
    except SyntaxError as exc:
        col = f", column {exc.offset}" if exc.offset else ""
        return f"{path}:{exc.lineno or 0}: {type(exc).__name__}: {exc.msg}{col}"
    except ValueError as exc:  # e.g. a NUL byte
        return f"{path}: does not compile: {exc}"
    found: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    assigned = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            found, assigned = node, False
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == function for t in targets):
                found, assigned = None, True  # bound some other way: checked when run
        elif isinstance(node, ast.ImportFrom) and any(
                (a.asname or a.name) == function for a in node.names):
            found, assigned = None, True
    want = f"{function}({', '.join(params)})"
    if found is None:
        if assigned:
            return None
        return f"{path}:1: defines no function {want} at module level"
    if isinstance(found, ast.AsyncFunctionDef):
        return f"{path}:{found.lineno}: {function} is async; the contract asks for {want}"
    a = found.args
    positional = [*a.posonlyargs, *a.args]
    required = len(positional) - len(a.defaults)
    kwonly_required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                       if d is None]
    n = len(params)
    if required > n or (a.vararg is None and len(positional) < n) or kwonly_required:
        got = ast.unparse(a)
        return (f"{path}:{found.lineno}: {function}({got}) has the wrong signature; "
                f"the contract calls {want}")
    return None
