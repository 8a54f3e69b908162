"""Chapter parameters, checked in one place, first thing, as people type them.

A chapter's first code cell calls ``dl.params.check("02_at_least_once", globals())``:
every parameter of that chapter is checked against :data:`SPECS` (type, range, fault
names from the registry, paths) and normalised in place, and a bad one stops the run
in one line of the library's shape (``name=value is not accepted; expected ...``).

List parameters accept what papermill's ``-p`` delivers: ``-p faults '["lose_ack"]'``
arrives as the *text* ``'["lose_ack"]'``, which is parsed (JSON, or YAML's flow form
``[lose_ack]``) into the list it spells; ``-y 'faults: [lose_ack]'`` arrives as a list
already. Anything else is refused in one line that shows both forms.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from .errors import bad_value
from .faults import FAULTS

#: How to write a list on papermill's command line, shown with every refused list.
LIST_FORMS = "-p {name} '[\"{example}\"]' or -y '{name}: [{example}]'"


@dataclass(frozen=True)
class Spec:
    """One parameter: its kind and what is accepted.

    ``kind`` is ``int``, ``float``, ``path`` or ``names`` (a list whose items must be
    in ``choices``: a chapter's fault buttons, or its console actions).
    """

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def check(self, name: str, value: Any) -> Any:
        if self.kind == "int":
            return _number(name, value, self.low, self.high, integer=True)
        if self.kind == "float":
            return _number(name, value, self.low, self.high, integer=False)
        if self.kind == "path":
            if not isinstance(value, str) or not value.strip() or "\n" in value:
                raise bad_value(name, value, "a file path, e.g. 'results/out.json'")
            return value
        if self.kind == "names":
            return names(name, value, self.choices)
        raise bad_value("kind", self.kind, "int, float, path or names")


def _number(name: str, value: Any, low: float | None, high: float | None,
            integer: bool) -> int | float:
    text = f"a whole number from {low:g} to {high:g}" if integer else \
        f"a number from {low:g} to {high:g}"
    if isinstance(value, str):  # papermill -p with a type it could not infer
        try:
            value = float(value) if not integer else int(value.strip())
        except ValueError:
            raise bad_value(name, value, text) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_value(name, value, text)
    if integer and (not float(value).is_integer()):
        raise bad_value(name, value, text)
    if isinstance(value, float) and not math.isfinite(value):
        raise bad_value(name, value, text)
    if (low is not None and value < low) or (high is not None and value > high):
        raise bad_value(name, value, text)
    return int(value) if integer else float(value)


def parse_list(name: str, value: Any, example: str = "lose_ack") -> list[Any]:
    """A list parameter as papermill delivers it: a list, or a JSON / YAML text of one."""
    forms = LIST_FORMS.format(name=name, example=example)
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        for load in (json.loads, _yaml):
            try:
                parsed = load(text)
            except ValueError:
                continue
            if isinstance(parsed, list):
                return parsed
        raise bad_value(name, value, f"a list, e.g. {forms}")
    raise bad_value(name, value, f"a list, e.g. {forms}")


def _yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None


def names(name: str, value: Any, choices: tuple[str, ...]) -> list[Any]:
    """A list of names, each one of ``choices``; items may also be dicts
    ``{"fault": name, "sent": n}`` (a fault at an exact count)."""
    example = choices[0] if choices else "lose_ack"
    items = parse_list(name, value, example)
    for item in items:
        label = item.get("fault") if isinstance(item, Mapping) else item
        if label not in choices:
            other = (" (a fault of the registry, but not a button of this chapter)"
                     if label in FAULTS else "")
            raise bad_value(f"{name} item", label, "items from " + ", ".join(choices) + other)
    return items


_COMMON = {
    "brokers": Spec("int", 1, 5),
    "seed": Spec("int", 0, 2**31 - 1),
    "results_path": Spec("path"),
    "messages": Spec("int", 1, 100_000),
    "rate": Spec("float", 0.1, 10_000),
}

#: Every chapter's parameters. Fault lists accept exactly the chapter's buttons (all
#: registry names); chapter 04's ``actions`` are its transaction console's buttons.
SPECS: dict[str, dict[str, Spec]] = {
    "00_tour": {**_COMMON, "brokers": Spec("int", 3, 5), "partitions": Spec("int", 1, 12),
                "faults": Spec("names", choices=("kill_leader", "heal"))},
    "01_at_most_once": {
        **_COMMON, "brokers": Spec("int", 3, 5),
        "faults": Spec("names", choices=("pause_followers", "kill_leader", "heal")),
        "scenario_values": Spec("int", 100, 100_000), "crash_values": Spec("int", 20, 100_000)},
    "02_at_least_once": {
        **_COMMON, "faults": Spec("names", choices=("lose_ack", "heal")),
        "values": Spec("int", 10, 100_000), "crash_after": Spec("int", 1, 100_000),
        "stall_after": Spec("int", 1, 100_000),
        "max_poll_interval_ms": Spec("int", 6000, 300_000)},
    "03_idempotent_producer": {
        **_COMMON, "faults": Spec("names", choices=("lose_ack", "heal")),
        "values": Spec("int", 10, 100_000)},
    "04_transactions": {
        "brokers": _COMMON["brokers"], "seed": _COMMON["seed"],
        "results_path": _COMMON["results_path"], "partitions": Spec("int", 1, 12),
        "actions": Spec("names", choices=("Begin", "Write", "Commit", "Abort",
                                          "Start a twin", "Zombie writes")),
        "values": Spec("int", 10, 100_000), "crash_after": Spec("int", 1, 100_000)},
    "07_exactly_once_sources": {
        "brokers": Spec("int", 3, 5), "seed": _COMMON["seed"],
        "results_path": _COMMON["results_path"], "lines": Spec("int", 10, 100_000),
        "interval_ms": Spec("int", 5000, 60_000),
        "actions": Spec("names", choices=("Append 50 lines", "kill_worker", "stop_worker",
                                          "pause_worker", "resume_worker", "restart_worker",
                                          "restart_task"))},
}


def check(chapter: str, scope: MutableMapping[str, Any]) -> dict[str, Any]:
    """Check and normalise ``chapter``'s parameters found in ``scope`` (a notebook's
    ``globals()``), in place; returns them. Cross-parameter rules too (a crash point
    inside the values written)."""
    if chapter not in SPECS:
        raise bad_value("chapter", chapter, "one of " + ", ".join(SPECS))
    out: dict[str, Any] = {}
    for name, spec in SPECS[chapter].items():
        if name not in scope:
            raise bad_value("parameter", name, f"a value: {chapter}'s parameters cell sets it")
        out[name] = spec.check(name, scope[name])
    for name in ("crash_after", "stall_after"):
        if name in out and "values" in out and out[name] >= out["values"]:
            raise bad_value(name, out[name], f"a whole number below values ({out['values']})"
                            ": the fault must happen before the input runs out")
    scope.update(out)
    return out
