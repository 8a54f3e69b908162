"""The lab's log: where what a student need not act on goes, instead of their cell.

A Jupyter kernel copies everything written to stderr into the running cell as a red
box, and Python's warnings and unhandled log records go there. Most of what the lab's
own machinery has to say -- a fault that took the controller quorum away *because the
chapter asked for it*, a figure that had to grow to fit its legend -- is a note for
whoever debugs the lab, not something a student can act on; in the middle of a lesson
it reads as an error. So the library logs under the ``deliverylab`` logger, and this
module gives that logger one file per Python process, ``<tmp>/deliverylab-<pid>.log``
(``$DELIVERYLAB_LOG`` names another), and stops its records from reaching the root
logger's stderr. The file exists once there is something in it, and is removed when
Python exits normally (the lab leaves nothing in the temporary folder); a kernel that
died keeps it for the post-mortem. The Spark JVM's own output has its log beside it
(:func:`deliverylab.spark.session.jvm_log`).

What a student *must* act on still reaches the cell, as an exception or a printed line.
"""

from __future__ import annotations

import atexit
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The library's logger: every ``deliverylab.*`` logger propagates to it.
ROOT = "deliverylab"
#: Environment variable naming the log file instead of the per-process default.
LOG_ENV = "DELIVERYLAB_LOG"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_handler: logging.FileHandler | None = None
#: Every default-named log this process opened (the temporary folder can change under a
#: running process, e.g. a test's TMPDIR, and the handler with it): all are removed at
#: exit, not only the last one. Keyed by pid: a forked child leaves its parent's alone.
_opened: set[tuple[int, str]] = set()


def path() -> Path:
    """This process's lab log (created on the first record)."""
    given = os.environ.get(LOG_ENV)
    if given:
        return Path(given)
    return Path(tempfile.gettempdir()) / f"deliverylab-{os.getpid()}.log"


def logger(name: str) -> logging.Logger:
    """The ``deliverylab`` logger of ``name`` (a module's ``__name__``), writing to the
    lab's log and never to stderr."""
    _attach()
    if name != ROOT and not name.startswith(ROOT + "."):
        name = f"{ROOT}.{name}"
    return logging.getLogger(name)


def _attach() -> None:
    """Give the ``deliverylab`` logger its file, once per process (and again after a
    fork: the child's pid names its own file)."""
    global _handler
    target = path()
    if _handler is not None and _handler.baseFilename == os.path.abspath(target):
        return
    root = logging.getLogger(ROOT)
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    # delay: the file exists only once there is something in it.
    _handler = logging.FileHandler(target, encoding="utf-8", delay=True)
    if not os.environ.get(LOG_ENV):
        _opened.add((os.getpid(), _handler.baseFilename))
    _handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(_handler)
    root.setLevel(logging.INFO)
    # Not up to the root logger: with no handler there, Python's last resort prints
    # WARNING and above to stderr -- the red box this module exists to avoid.
    root.propagate = False


@contextmanager
def warnings_to_log(category: type[Warning], name: str) -> Iterator[list[str]]:
    """Inside: warnings of ``category`` go to the lab's log (logger ``name``) instead
    of the cell; others pass on as usual. Yields the list of their messages, so the
    caller can say in its own output what happened, in the lesson's words."""
    noted: list[str] = []
    log = logger(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield noted
        finally:
            for w in caught:
                if issubclass(w.category, category):
                    noted.append(str(w.message))
                    log.warning("%s: %s", w.category.__name__, w.message)
    # Outside the catch, so that the caller's own filters decide about the others.
    for w in caught:
        if not issubclass(w.category, category):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)



def _remove_at_exit() -> None:
    """Close and remove every default-named log this process opened (one named by
    ``$DELIVERYLAB_LOG`` is its owner's to keep)."""
    if _handler is not None:
        _handler.close()
    for pid, name in _opened:
        if pid == os.getpid():
            Path(name).unlink(missing_ok=True)


atexit.register(_remove_at_exit)
