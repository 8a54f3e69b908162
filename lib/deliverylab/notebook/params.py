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

from ..errors import bad_value
from ..faults import FAULTS
from ..modes import MODES
from ..spark.query import SINKS
from .chapter import number
from .questions import QUESTIONS

#: How to write a list on papermill's command line, shown with every refused list.
LIST_FORMS = "-p {name} '[\"{example}\"]' or -y '{name}: [{example}]'"


@dataclass(frozen=True)
class Spec:
    """One parameter: its kind and what is accepted.

    ``kind`` is ``int``, ``float``, ``path``, ``choice`` (one of ``choices``),
    ``choice_or_url`` (one of ``choices``, or a URL), ``master`` (a Spark master URL) or
    ``names`` (a list whose items must be in ``choices``: a chapter's fault buttons, or
    its console actions) or ``prediction`` (``None``: the student answers in the
    widget; else what :data:`~deliverylab.notebook.questions.QUESTIONS` ``[question]``
    accepts, which a headless run passes to stand for the student's prediction).
    """

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    question: str = ""

    def check(self, name: str, value: Any) -> Any:
        if self.kind == "int":
            return _number(name, value, self.low, self.high, integer=True)
        if self.kind == "float":
            return _number(name, value, self.low, self.high, integer=False)
        if self.kind == "path":
            if not isinstance(value, str) or not value.strip() or "\n" in value:
                raise bad_value(name, value, "a file path, e.g. 'results/out.json'")
            return value
        if self.kind == "solution":  # a graded exercise's file; "" means the student's
            if value in (None, ""):
                return ""
            if not isinstance(value, str) or not value.endswith(".py") or "\n" in value:
                raise bad_value(name, value, "'' (your file in labs/exercises) or the path "
                                "of a .py solution, e.g. 'solutions/02_consume_loop/"
                                "reference.py'")
            return value
        if self.kind == "choice":
            if value not in self.choices:
                raise bad_value(name, value, "one of " + ", ".join(map(repr, self.choices)))
            return value
        if self.kind == "names":
            return names(name, value, self.choices)
        if self.kind == "prediction":
            if value is None:
                return None
            q = QUESTIONS[self.question]
            if q.kind == "set":
                example = repr(q.values()[0]).replace("'", "")
                value = parse_list(name, value, example)
            return q.check(name, value)
        if self.kind == "master":  # a Spark master URL
            if not isinstance(value, str) or not value.startswith(
                    ("local", "spark://", "local-cluster[")):
                raise bad_value(name, value, "a Spark master: 'local[2]', 'local[*]' or "
                                "'spark://host:7077'")
            return value
        if self.kind == "choice_or_url":  # chapter 06's database: a name, or a server's URL
            if isinstance(value, str) and (value in self.choices or "://" in value):
                return value
            raise bad_value(name, value, " or ".join(repr(c) for c in self.choices)
                            + ", or a URL such as postgresql://user@host:5432/db")
        raise bad_value("kind", self.kind, "int, float, path, choice, choice_or_url, "
                        "master, names or prediction")


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


#: Where a chapter's brokers run (``Cluster(backend=...)``): containers when a Docker
#: engine answers and the broker image is there, else local JVM processes.
BACKEND = Spec("choice", choices=("auto", "docker", "local"))

_COMMON = {
    "backend": BACKEND,
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
        "faults": Spec("names", choices=("pause_followers", "kill_leader",
                                         "partition_leader", "heal")),
        "scenario_values": Spec("int", 100, 100_000), "crash_values": Spec("int", 20, 100_000)},
    "02_at_least_once": {
        **_COMMON, "faults": Spec("names", choices=("lose_ack", "partition_leader", "heal")),
        "values": Spec("int", 10, 100_000), "crash_after": Spec("int", 1, 100_000),
        "solution": Spec("solution"), "grade_seeds": Spec("int", 1, 100)},
    "02b_consumer_groups": {
        "backend": BACKEND, "brokers": _COMMON["brokers"], "seed": _COMMON["seed"],
        "results_path": _COMMON["results_path"], "values": Spec("int", 10, 100_000),
        "stall_after": Spec("int", 1, 100_000),
        "max_poll_interval_ms": Spec("int", 6000, 300_000)},
    "03_idempotent_producer": {
        **_COMMON, "faults": Spec("names", choices=("lose_ack", "heal")),
        "values": Spec("int", 10, 100_000)},
    "04_transactions": {
        "backend": BACKEND, "brokers": _COMMON["brokers"], "seed": _COMMON["seed"],
        "results_path": _COMMON["results_path"], "partitions": Spec("int", 1, 12),
        "actions": Spec("names", choices=("Begin", "Write", "Commit", "Abort",
                                          "Start a twin", "Zombie writes")),
        "values": Spec("int", 10, 100_000), "crash_after": Spec("int", 1, 100_000),
        "solution": Spec("solution"), "grade_seeds": Spec("int", 1, 100)},
    "05_spark_pipeline": {
        "backend": BACKEND, "brokers": _COMMON["brokers"], "seed": _COMMON["seed"],
        "results_path": _COMMON["results_path"],
        "faults": Spec("names", choices=("crash_query", "kill_driver")),
        "values": Spec("int", 6, 100_000), "max_offsets": Spec("int", 1, 100_000),
        "crash_at": Spec("int", 0, 10_000), "master": Spec("master"),
        "solution": Spec("solution"), "grade_seeds": Spec("int", 1, 100)},
    "06_side_effects": {
        **_COMMON, "database": Spec("choice_or_url", choices=("sqlite", "postgres")),
        "faults": Spec("names", choices=("kill_after_db", "kill_after_http", "stall_consumer",
                                         "restart_instance", "lose_ack", "heal")),
        "orders": Spec("int", 8, 10_000), "max_poll_interval_ms": Spec("int", 6000, 300_000),
        "solution": Spec("solution"), "grade_seeds": Spec("int", 1, 100)},
    "08_cost_of_guarantees": {
        "backend": BACKEND, "brokers": _COMMON["brokers"], "seed": _COMMON["seed"],
        "results_path": _COMMON["results_path"], "record_size": Spec("int", 8, 1_000_000),
        "linger_ms": Spec("float", 0, 5000), "batch_size": Spec("int", 1, 2_147_483_647),
        "commit_interval_ms": Spec("float", 1, 60_000), "reps": Spec("int", 1, 50),
        "seconds": Spec("float", 0.2, 600), "latency_seconds": Spec("float", 0.5, 600),
        "rate": Spec("float", 1, 10_000), "ctp_values": Spec("int", 0, 1_000_000)},
    "07_exactly_once_sources": {
        "backend": BACKEND, "brokers": Spec("int", 3, 5), "seed": _COMMON["seed"],
        "results_path": _COMMON["results_path"], "lines": Spec("int", 10, 100_000),
        "interval_ms": Spec("int", 1000, 60_000),
        "flush_ms": Spec("int", 500, 600_000), "kill_after_lines": Spec("int", 10, 99_999),
        "actions": Spec("names", choices=("Append 50 lines", "kill_worker", "stop_worker",
                                          "pause_worker", "resume_worker", "restart_worker",
                                          "restart_task"))},
    "09_kafka_bugs": {
        "backend": BACKEND, "seed": _COMMON["seed"], "results_path": _COMMON["results_path"],
        "runs": Spec("int", 1, 50), "expiration_ms": Spec("int", 100, 10_000),
        "fixed_expiration_ms": Spec("int", 20_000, 86_400_000),
        "java_runs": Spec("int", 0, 50),
        "matrix_source": Spec("choice", choices=("run", "file")),
        "matrix_results": _COMMON["results_path"], "matrix_seeds": Spec("int", 1, 50),
        "matrix_modes": Spec("names", choices=tuple(MODES)),
        "matrix_faults": Spec("names", choices=tuple(FAULTS)),
        "matrix_sinks": Spec("names", choices=tuple(SINKS)),
        "actions": Spec("names", choices=("Expired producer", "Expiration above timeout",
                                          "Stale EndTxn", "Java client",
                                          "Hanging transaction", "Verified late write"))},
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
    if "crash_at" in out and "values" in out and "max_offsets" in out and (
            out["crash_at"] + 1) * out["max_offsets"] >= out["values"]:
        raise bad_value("crash_at", out["crash_at"], "a batch before the last one: with "
                        f"values={out['values']} and max_offsets={out['max_offsets']}, "
                        f"below {max(0, -(-out['values'] // out['max_offsets']) - 1)}")
    if "kill_after_lines" in out and "lines" in out and out["kill_after_lines"] >= out["lines"]:
        raise bad_value("kill_after_lines", out["kill_after_lines"],
                        f"a whole number below lines ({out['lines']}): the kill comes "
                        "mid-stream")
    for name in ("crash_after", "stall_after"):
        if name in out and "values" in out and out[name] >= out["values"]:
            raise bad_value(name, out[name], f"a whole number below values ({out['values']})"
                            ": the fault must happen before the input runs out")
    scope.update(out)
    return out


def _predictions(chapter: str) -> dict[str, Spec]:
    """The chapter's ``predict_<short>`` parameters, one per question of the course."""
    return {q.parameter: Spec("prediction", question=q.name)
            for q in QUESTIONS.values() if q.name.split("_", 1)[0] == number(chapter)}


for _chapter, _specs in SPECS.items():
    _specs.update(_predictions(_chapter))
