"""Chapter 02's kit (``labs/02_at_least_once.ipynb``): the choreographies of at least once
that the shared vocabulary does not hold.

The notebook reaches it one way, ``from deliverylab.chapters import at_least_once as kit``:

- ``kit.client_defaults()``: both clients' defaults that decide a guarantee, read from
  the clients on this machine (:mod:`.client_defaults`);
- ``kit.default_consumer_crash(...)``: the default, auto-committing consumer crashed in
  a real process after its commit timer fired (:mod:`.autocommit`).

(The lost-ack recipe the chapter shares with 01 and 03 is ``dl.lost_ack_duplicate``.)

Names load on first use: :mod:`.autocommit` is also the crashing child process
(``python -m deliverylab.chapters.at_least_once.autocommit``), which must not be imported
by its own package before it runs as ``__main__``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: The kit's names -> (module of this package, its name there).
_NAMES = {
    "default_consumer_crash": ("autocommit", "default_consumer_crash"),
    "AutoCommitCrash": ("autocommit", "AutoCommitCrash"),
    "STORES": ("autocommit", "STORES"),
    "client_defaults": ("client_defaults", "table"),
}


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"chapter 02's kit has no {name!r}; it has "
                             + ", ".join(sorted(_NAMES)))
    module, attr = _NAMES[name]
    return getattr(importlib.import_module(f".{module}", __name__), attr)


__all__ = sorted(_NAMES)
