"""Consoles: buttons that drive a client by hand, beside the fault buttons.

:class:`TxnConsole` is chapter 04's transaction by hand (Begin, Write, Commit, Abort,
Start a twin, Zombie writes). Its buttons are *actions* of a client, not faults, so
they are plain callables on a :class:`~deliverylab.notebook.widgets.FaultPanel`; their names
are :data:`ACTIONS`, the values chapter 04's headless ``actions`` parameter accepts.
Introduced in ``labs/04_transactions.ipynb``.
"""

from __future__ import annotations

from typing import Any

from .. import readers
from ..clients import Fenced, TxnProducer
from ..history import History
from .widgets import FaultSpec

#: The console's buttons, by the names a headless schedule presses.
ACTIONS = ("Begin", "Write", "Commit", "Abort", "Start a twin", "Zombie writes")


class TxnConsole:
    """Buttons for a transaction by hand: Begin, Write, Commit, Abort, Start a twin.

    Each press returns one line; a write also says where the last stable offset (LSO)
    and the high watermark now are, so a student watches an open transaction hold
    read_committed readers back. "Start a twin" starts a second producer with the same
    ``transactional.id``: the first is fenced, and from then on the buttons drive the
    twin (the fenced one can only fail).
    """

    def __init__(self, cluster: Any, topic: str, history: History,
                 process: str = "you", **producer_args: Any) -> None:
        self.cluster = cluster
        self.topic = topic
        self.history = history
        self.producer_args = producer_args
        self.current = TxnProducer(cluster, topic, history, process=process, **producer_args)
        self.fenced: list[TxnProducer] = []

    def bounds(self) -> list[dict[str, int]]:
        """Per partition: high watermark and last stable offset (ListOffsets)."""
        return readers.bounds(self.cluster, self.topic)

    def settled_bounds(self, timeout: float = 10.0) -> list[dict[str, int]]:
        """:meth:`bounds` once the markers of the last commit or abort are written
        (``commit_transaction()`` returns when the coordinator has decided; the markers
        reach the partitions a moment later). Raises if they never settle."""
        return readers.wait_stable(self.cluster, self.topic, timeout)

    def offsets_text(self, settle: bool = False) -> str:
        parts = []
        for b in (self.settled_bounds() if settle else self.bounds()):
            held = " (held back)" if b["last_stable_offset"] < b["high_watermark"] else ""
            parts.append(f"p{b['partition']}: LSO {b['last_stable_offset']} / "
                         f"HW {b['high_watermark']}{held}")
        return "; ".join(parts)

    def begin(self) -> str:
        return self.current.begin()

    def write(self) -> str:
        return f"{self.current.write()} -- {self.offsets_text()}"

    def commit(self) -> str:
        return f"{self.current.commit()} -- {self.offsets_text(settle=True)}"

    def abort(self) -> str:
        return f"{self.current.abort()} -- {self.offsets_text(settle=True)}"

    def start_twin(self) -> str:
        old = self.current
        twin = TxnProducer(self.cluster, self.topic, self.history,
                           transactional_id=old.transactional_id,
                           process=f"{old.process}-twin{len(self.fenced) + 1}",
                           **self.producer_args)
        self.fenced.append(old)
        self.current = twin
        return (f"started {twin.process} with transactional.id {old.transactional_id!r}: "
                f"{old.process} is fenced (its open transaction, if any, was aborted); "
                "press Zombie writes to let it try to write")

    def old_write(self) -> str:
        """Let the most recently fenced producer try to write: it must fail.

        The refusal is the lesson, so it is this button's result, not an error; a write
        that got through would be the surprise, and says so.
        """
        if not self.fenced:
            return "no fenced producer yet: press Start a twin first"
        try:
            done = self.fenced[-1].write()
        except Fenced as exc:
            return f"refused, as it must be: {exc}"
        return f"ACCEPTED -- the fenced producer was not fenced: {done}"

    def specs(self) -> list[FaultSpec]:
        return [
            FaultSpec("Begin", self.begin, style="info", help="begin_transaction()"),
            FaultSpec("Write", self.write, style="primary",
                      help="write one value to each partition, inside the transaction"),
            FaultSpec("Commit", self.commit, style="success", help="commit_transaction()"),
            FaultSpec("Abort", self.abort, style="danger", help="abort_transaction()"),
            FaultSpec("Start a twin", self.start_twin, style="warning",
                      help="a second producer with the same transactional.id fences this one"),
            FaultSpec("Zombie writes", self.old_write, style="warning",
                      help="the fenced producer tries to write again"),
        ]
