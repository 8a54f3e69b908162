"""Student profiles: how big each JVM of a student's stack may grow.

A laptop runs one student; a classroom host runs thirty. The chapters are the same in
both: what changes is a *setting the chapters read*, ``$DELIVERYLAB_PROFILE``, which a
hub sets for every single-user server (a laptop leaves it unset). The profile caps the
JVMs the lab starts -- the brokers' and controllers' heaps, the Spark driver's heap and
collector -- and never a chapter's parameters, so every chapter's claim is decided the
same way under both (``python -m deliverylab.classroom.sizing.plan`` measures both side by side;
docs/measurements.md, "Sizing a classroom", holds the figures).

Why these levers: a student's memory is mostly JVMs (one to four brokers, the Spark
driver, Connect workers), and a JVM holds what its collector lets its heap grow to, not
what the lab's few thousand records need. Spark's driver defaults to a 1 GB heap
(``spark.driver.memory``) and the G1 collector, whose remembered sets and regions cost
memory of their own; a teaching cluster's Spark reads a few thousand records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import bad_value

#: The environment variable a hub sets on each student's server (e.g. the spawner's
#: ``environment``). Unset or "default": the lab's own sizes.
PROFILE_ENV = "DELIVERYLAB_PROFILE"


@dataclass(frozen=True)
class Profile:
    """JVM options a student profile adds (after the lab's own, so they win: the JVM
    takes the last of a repeated flag). Empty lists keep the lab's defaults."""

    name: str
    says: str
    broker_opts: list[str] = field(default_factory=list)
    controller_opts: list[str] = field(default_factory=list)
    #: Spark settings for the kernel's session (and chapter 05's child driver).
    spark_conf: dict[str, str] = field(default_factory=dict)


PROFILES: dict[str, Profile] = {
    "default": Profile("default", "the lab's own sizes (a laptop, one student)"),
    "light": Profile(
        "light",
        "classroom: smaller broker heaps and a Spark driver of 512 MB at most",
        # A teaching broker holds a few thousand records; its heap stays well under this.
        broker_opts=["-Xmx256m", "-XX:MaxDirectMemorySize=64m"],
        controller_opts=["-Xmx96m"],
        # 512m: Spark refuses a driver whose usable heap is under 1.5 x 300 MB reserved
        # (UnifiedMemoryManager's minimum system memory, 450 MB): 512m clears it. Every
        # driver already starts at 64 MB on the serial collector with C1 only (spark/
        # session.py DRIVER_JVM_OPTS; the initial heap was otherwise 1/64 of the host's
        # memory, 377 MB on a 24 GB host, and eden, once allocated through, stays
        # resident: the driver was the largest part of a student, 0.42 of 0.70 GB PSS
        # with chapter 02's stack, before those options).
        spark_conf={"spark.driver.memory": "512m"},
    ),
}


def current() -> Profile:
    """The profile ``$DELIVERYLAB_PROFILE`` names (default: ``default``)."""
    name = os.environ.get(PROFILE_ENV, "").strip() or "default"
    if name not in PROFILES:
        raise bad_value(PROFILE_ENV, name, "one of " + ", ".join(PROFILES))
    return PROFILES[name]
