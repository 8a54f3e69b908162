"""What a Connect source task's producer really ran with, read from the worker's own log.

Seed 001 names a second source of Connect duplicates besides the offset window: the
task's producer retrying a batch whose acknowledgement was lost, fixed by
``producer.enable.idempotence`` (worker) or ``producer.override.enable.idempotence``
(connector). Whether that is needed depends on the Java producer's defaults and on what
the worker itself overrides for its task producers (``acks=all``, one request in
flight, ...). Rather than state it, we read it: every Kafka client logs its effective
configuration at INFO when it starts ("ProducerConfig values:" then one tab-indented
``key = value`` line each), and the lab's workers log at INFO.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import LabError

_HEADER = "ProducerConfig values:"
_LINE = re.compile(r"^\t([a-z0-9.]+) = ?(.*)$")


def producer_configs(text: str) -> list[dict[str, str]]:
    """Every "ProducerConfig values:" block of a log, as dicts (in log order)."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if _HEADER in line:
            current = {}
            blocks.append(current)
            continue
        if current is not None:
            m = _LINE.match(line)
            if m:
                current[m.group(1)] = m.group(2).strip()
            else:
                current = None
    return blocks


def task_producer_config(logs: Iterable[Path], connector: str, task: int = 0) -> dict[str, str]:
    """The last logged configuration of the producer of ``connector``'s task ``task``
    (client id ``connector-producer-<connector>-<task>``), from the workers' logs.

    Raises :class:`LabError` naming the logs read if no worker logged it.
    """
    client = f"connector-producer-{connector}-{task}"
    found: list[dict[str, str]] = []
    paths = list(logs)
    for path in paths:
        if path.exists():
            found += [b for b in producer_configs(path.read_text(errors="replace"))
                      if b.get("client.id") == client]
    if not found:
        raise LabError(f"no worker logged the configuration of producer {client!r} "
                       f"(read: {', '.join(map(str, paths))})")
    return found[-1]


def task_producer(connect: Any, connector: str, task: int = 0,
                  keys: tuple[str, ...] = ("enable.idempotence", "acks", "retries",
                                           "max.in.flight.requests.per.connection",
                                           "transactional.id")) -> dict[str, str]:
    """The settings that decide retry duplicates, of a running Connect cluster's task."""
    conf = task_producer_config((w.log_path for w in connect.workers), connector, task)
    return {k: conf.get(k, "(not logged)") for k in keys}
