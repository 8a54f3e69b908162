"""Chapter 02's kit (``labs/02_at_least_once.ipynb``): the choreographies of at least once
that the shared vocabulary does not hold.

The notebook reaches it one way, ``from deliverylab.chapters import at_least_once as kit``:

- ``kit.lost_ack_duplicate(...)``: a produce whose acknowledgement is lost, two copies
  without idempotence (:mod:`.lost_ack`; chapter 03 runs it again, idempotent);
- ``kit.client_defaults()``: both clients' defaults that decide a guarantee, read from
  the clients on this machine (:mod:`.defaults`);
- ``kit.default_consumer_crash(...)``: the default, auto-committing consumer crashed in
  a real process after its commit timer fired (:mod:`.autocommit`).

Names load on first use (:func:`deliverylab.process.lazy.lazy_names`): :mod:`.autocommit` is
also the crashing child process (``python -m deliverylab.chapters.at_least_once.autocommit``),
which must not be imported by its own package before it runs as ``__main__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...process.lazy import lazy_names

if TYPE_CHECKING:  # the names, for readers and the layout test's import graph
    from .autocommit import STORES, AutoCommitCrash, default_consumer_crash
    from .defaults import table as client_defaults
    from .lost_ack import LostAckResult, lost_ack_duplicate

__all__ = ["AutoCommitCrash", "LostAckResult", "STORES", "client_defaults",
           "default_consumer_crash", "lost_ack_duplicate"]
__getattr__, __dir__ = lazy_names(__name__, {
    "lost_ack_duplicate": ("lost_ack", "lost_ack_duplicate"),
    "LostAckResult": ("lost_ack", "LostAckResult"),
    "default_consumer_crash": ("autocommit", "default_consumer_crash"),
    "AutoCommitCrash": ("autocommit", "AutoCommitCrash"),
    "STORES": ("autocommit", "STORES"),
    "client_defaults": ("defaults", "table"),
})
