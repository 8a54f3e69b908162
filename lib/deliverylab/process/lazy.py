"""A package's names loaded on first use (PEP 562), so that a child process imports only
what it needs.

Why: ``python -m deliverylab.<package>.<module>``, how :func:`.children.python_module`
starts the lab's children (the grader's student processes, the fault proxy's engine,
chapter 02's crashing consumer, 04's zombie instances), runs ``<package>/__init__.py``
first. A package whose ``__init__`` imported what it re-exports made every child under it
import that too: the grader's child imported the grader's whole parent side (report,
runner, nemesis, cluster), about 0.4 s of a process that lives a few seconds, hundreds of
times a test run. And a module that a child runs as ``__main__`` must not be imported by
its own package before it runs (a chapter kit's child).

A package that a child runs under and that re-exports names does it one way::

    from typing import TYPE_CHECKING

    from ..process.lazy import lazy_names

    if TYPE_CHECKING:  # the names, for readers and the layout test's import graph
        from .cluster import Cluster, free_ports

    __all__ = ["Cluster", "free_ports"]
    __getattr__, __dir__ = lazy_names(__name__, {name: ("cluster", name) for name in __all__})

The ``TYPE_CHECKING`` import costs nothing at run time and keeps the package's edge to the
module in the import graph that ``tests/unit/test_layout.py`` reads (rule 3 counts a
type-only import): a circle closed through the package stays one.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, names: dict[str, tuple[str, str]]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module ``__getattr__`` and ``__dir__``: ``names`` maps each name the
    package exports to (its module in the package, its name there), imported on first use
    and then bound on the package; a name it lacks is one line saying what it has."""
    def __getattr__(name: str) -> Any:
        if name not in names:  # what it has: its lazy names and the ones of its own
            has = {*names, *getattr(sys.modules[package], "__all__", ())}
            raise AttributeError(f"{package} has no {name!r}; it has "
                                 + ", ".join(sorted(has)))
        module, attr = names[name]
        value = getattr(importlib.import_module(f".{module}", package), attr)
        # Bound on the package, so the next access does not come here again.
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # a notebook's completion lists them before first use
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
