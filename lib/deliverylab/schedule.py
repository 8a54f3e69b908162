"""Schedules: faults fired by triggers (a time offset, a count of messages sent).

Jepsen's generator role, apart from the :class:`~deliverylab.nemesis.Nemesis` that does
the faults: a schedule only decides *when*, then presses the same door a button does
(``nemesis.apply`` or ``panel.press``). Papermill passes a chapter's schedule as a list
of dicts (``{"sent": 500, "fault": "kill_leader"}``); :meth:`Schedule.spread` plans one
from bare fault names; :meth:`Schedule.random` draws one from a seed.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import LabError, bad_value
from .faults import fault
from .nemesis import CLUSTER_FAULTS, NODE_FAULTS, FaultRecord, Nemesis, validate


@dataclass(frozen=True)
class At:
    """Trigger: ``seconds`` after the schedule started."""

    seconds: float


@dataclass(frozen=True)
class Sent:
    """Trigger: once the workload reports ``count`` messages sent."""

    count: int


Trigger = At | Sent


@dataclass(frozen=True)
class Step:
    """One scheduled fault: its trigger, its name, its arguments."""

    trigger: Trigger
    fault: str
    args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.trigger, At):
            s = self.trigger.seconds
            if not isinstance(s, (int, float)) or isinstance(s, bool) or s < 0:
                raise bad_value("at", s, "a number of seconds >= 0")
        elif isinstance(self.trigger, Sent):
            c = self.trigger.count
            if not isinstance(c, int) or isinstance(c, bool) or c < 0:
                raise bad_value("sent", c, "a whole number of messages >= 0")
        else:
            raise bad_value("trigger", self.trigger, "At(seconds) or Sent(count)")
        fault(self.fault)  # a name outside the registry fails here, before any run
        object.__setattr__(self, "args", dict(self.args))

    def to_param(self) -> dict[str, Any]:
        """The papermill form: ``{"sent": 500, "fault": "kill_leader", "topic": "t"}``."""
        when = ({"at": self.trigger.seconds} if isinstance(self.trigger, At)
                else {"sent": self.trigger.count})
        return {**when, "fault": self.fault, **self.args}


def _step(item: Step | Mapping[str, Any] | Sequence[Any]) -> Step:
    """A Step from a Step, a papermill dict, or a ``(trigger, fault[, args])`` tuple."""
    if isinstance(item, Step):
        return item
    if isinstance(item, Mapping):
        rest = dict(item)
        if ("at" in rest) == ("sent" in rest):
            raise bad_value("schedule step", item, "a dict with exactly one of 'at' "
                            "(seconds) or 'sent' (messages), and 'fault'")
        trigger: Trigger = At(rest.pop("at")) if "at" in rest else Sent(rest.pop("sent"))
        if "fault" not in rest:
            raise bad_value("schedule step", item, "a dict with a 'fault' name")
        fault = rest.pop("fault")
        args = rest.pop("args", {})
        return Step(trigger, fault, {**args, **rest})
    if isinstance(item, Sequence) and not isinstance(item, str) and len(item) in (2, 3):
        trigger, fault = item[0], item[1]
        if isinstance(trigger, (int, float)) and not isinstance(trigger, bool):
            trigger = At(float(trigger))  # a bare number is a time offset
        args = dict(item[2]) if len(item) == 3 else {}
        return Step(trigger, fault, args)
    raise bad_value("schedule step", item,
                    "a Step, a dict like {'sent': 500, 'fault': 'kill_leader', 'topic': 't'}"
                    ", or a tuple (At(5) or Sent(500), 'fault name', {args})")


class Schedule:
    """Faults fired by triggers: time offsets and message counts.

    The workload calls :meth:`tick` with its count of messages sent (as often as it
    likes); each due step fires once, in list order, through ``nemesis.apply`` -- the
    same door a button uses. Count triggers are exactly reproducible; time triggers are
    as precise as the ticks.

    >>> s = Schedule([(Sent(500), "kill_leader", {"topic": "t"}), (Sent(900), "heal")])
    >>> s = Schedule([{"sent": 500, "fault": "kill_leader", "topic": "t"}])  # papermill
    """

    def __init__(self, steps: Iterable[Step | Mapping[str, Any] | Sequence[Any]] = (),
                 seed: int | None = None) -> None:
        self.steps: tuple[Step, ...] = tuple(_step(s) for s in steps)
        self.seed = seed
        self.fired: list[tuple[Step, FaultRecord]] = []
        self._next = 0  # steps are fired in order; index of the first not fired
        self._nemesis: Any = None
        self._t0: float | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ constructors
    @classmethod
    def random(cls, seed: int, faults: Sequence[str] = ("lose_ack", "kill_leader",
                                                        "pause_broker", "partition_client"),
               steps: int = 3, sent: tuple[int, int] | None = (100, 1000),
               seconds: tuple[float, float] | None = None, topic: str | None = None,
               nodes: Sequence[int] = (1, 2, 3), heal: bool = True) -> Schedule:
        """A seeded random schedule: the same seed gives the same faults, always.

        The trigger range (``sent`` messages, or ``seconds`` if given) is cut into
        ``steps`` equal slots; each slot gets one fault drawn from ``faults`` at a
        random point of its first half, and (with ``heal``) a ``heal`` at three
        quarters, so faults never overlap and the run ends healed. Faults needing a
        node get one drawn from ``nodes``; ``kill_leader`` needs ``topic``;
        ``lose_ack`` aims at ``topic``'s leader if given, else at any broker.
        """
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise bad_value("seed", seed, "a whole number")
        names = [faults] if isinstance(faults, str) else list(faults)
        if not names:
            raise bad_value("faults", faults, "at least one of " + ", ".join(CLUSTER_FAULTS))
        for name in names:
            validate(name, _random_args(name, random.Random(0), topic or "t", (1,)))
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise bad_value("steps", steps, "a whole number >= 1")
        if "kill_leader" in names and topic is None:
            raise bad_value("topic", topic, "a topic name (kill_leader needs one)")
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise bad_value("steps", steps, "a whole number >= 1")
        if seconds is not None:
            lo, hi = seconds
        elif sent is not None:
            lo, hi = sent
        else:
            raise bad_value("sent/seconds", None, "a (low, high) range for one of them")
        if not 0 <= lo < hi:
            raise bad_value("range", (lo, hi), "(low, high) with 0 <= low < high")

        def make(x: float) -> Trigger:
            return At(round(x, 3)) if seconds is not None else Sent(int(x))

        rng = random.Random(seed)
        slot = (hi - lo) / steps
        out: list[Step] = []
        for i in range(steps):
            name = rng.choice(names)
            start = lo + i * slot
            out.append(Step(make(start + rng.uniform(0, slot / 2)), name,
                            _random_args(name, rng, topic, nodes)))
            if heal and name != "heal":
                out.append(Step(make(start + slot * 3 / 4), "heal"))
        return cls(out, seed=seed)

    @classmethod
    def spread(cls, items: Iterable[str | Mapping[str, Any]], count: int) -> Schedule:
        """A chapter's papermill ``faults``: fault names spread evenly over a stream of
        ``count`` values (with two, after 1/3 and 2/3 of it), or dicts
        ``{"fault": name, "sent": n}`` to fire after exactly ``n`` values."""
        items = list(items or ())
        bare = sum(isinstance(item, str) for item in items)
        steps: list[Step] = []
        k = 0
        for item in items:
            if isinstance(item, str):
                k += 1
                steps.append(Step(Sent(max(1, round(count * k / (bare + 1)))), item))
            elif isinstance(item, Mapping) and "sent" in item:
                sent = item["sent"]
                if not isinstance(sent, int) or isinstance(sent, bool) or not 0 <= sent <= count:
                    raise bad_value("sent", sent, f"a whole number from 0 to {count}")
                steps.append(_step(item))
            else:
                raise bad_value("fault", item, "a fault name, or {'fault': name, 'sent': n}")
        return cls(sorted(steps, key=lambda step: step.trigger.count))

    @classmethod
    def from_params(cls, params: Iterable[Mapping[str, Any]] | None) -> Schedule:
        """From a papermill parameter: a list of dicts (see :meth:`Step.to_param`)."""
        return cls(params or ())

    def to_params(self) -> list[dict[str, Any]]:
        return [s.to_param() for s in self.steps]

    # ------------------------------------------------------------------ running
    def start(self, nemesis: Any) -> Schedule:
        """Bind to a Nemesis, or a FaultPanel (anything with ``apply`` and ``now``: a
        panel presses its button of that name), and start the clock."""
        if isinstance(nemesis, Nemesis):
            for step in self.steps:
                validate(step.fault, step.args)
        with self._lock:
            self._nemesis = nemesis
            self._t0 = nemesis.now()
            self._next = 0
            self.fired.clear()
        return self

    def elapsed(self) -> float:
        if self._t0 is None:
            return 0.0
        return self._nemesis.now() - self._t0

    def due(self, step: Step, sent: int | None) -> bool:
        if isinstance(step.trigger, At):
            return self.elapsed() >= step.trigger.seconds
        return sent is not None and sent >= step.trigger.count

    def tick(self, sent: int | None = None) -> list[FaultRecord]:
        """Fire the due steps (in order; a step waits for the ones before it).

        ``sent`` is the workload's count of messages sent so far. Returns the records
        of the faults fired by this call (usually none).
        """
        if self._nemesis is None:
            raise LabError("call schedule.start(nemesis) before tick()")
        fired: list[FaultRecord] = []
        with self._lock:
            while self._next < len(self.steps) and self.due(self.steps[self._next], sent):
                step = self.steps[self._next]
                self._next += 1  # fired, even if it raises: never fire it twice
                record = self._nemesis.apply(step.fault, **step.args)
                self.fired.append((step, record))
                fired.append(record)
        return fired

    @property
    def done(self) -> bool:
        return self._next >= len(self.steps)

    @property
    def pending(self) -> tuple[Step, ...]:
        return self.steps[self._next:]

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __repr__(self) -> str:
        seed = f" seed={self.seed}" if self.seed is not None else ""
        body = "; ".join(_describe(s) for s in self.steps)
        return f"<Schedule{seed} {len(self.steps)} step(s): {body}>"


def _describe(step: Step) -> str:
    when = (f"at {step.trigger.seconds:g}s" if isinstance(step.trigger, At)
            else f"sent {step.trigger.count}")
    args = ", ".join(f"{k}={v!r}" for k, v in step.args.items())
    return f"{when} {step.fault}({args})"


def _random_args(name: str, rng: random.Random, topic: str | None,
                 nodes: Sequence[int]) -> dict[str, Any]:
    if name in NODE_FAULTS:
        return {"node": rng.choice(list(nodes))}
    if name == "kill_leader":
        return {"topic": topic}
    if name == "lose_ack":
        return {"topic": topic} if topic is not None else {}
    return {}
