"""The client defaults that change a delivery guarantee, read from the clients themselves.

The course's Python clients are librdkafka (confluent-kafka); Kafka's own tools, Spark's
Kafka source and Kafka Connect use the Java client. The two disagree on defaults that
decide what a program promises when its author sets nothing: idempotence, the isolation
level, what an auto-commit commits. A table typed by hand would drift with every client
release, so both columns are *asked for* on the student's machine:

* librdkafka: ``rd_kafka_conf_dump`` of a fresh configuration, from the very shared
  library confluent-kafka loaded (ctypes; the C API is stable and public);
* Java: ``ProducerConfig`` / ``ConsumerConfig`` of the pinned ``kafka-clients`` jar print
  their documentation table (their ``main``), whose ``Default:`` cells we read.

Only the *meaning* column is written here, with the documents it was checked against.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import html
import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import LabError


@dataclass(frozen=True)
class Setting:
    """One setting whose default changes a guarantee, and why it matters."""

    role: str  # "producer" or "consumer"
    java: str  # the Java client's name for it
    librdkafka: str | None  # librdkafka's name (None: librdkafka has no such setting)
    decides: str  # what the default decides, in one line
    chapter: str  # where the course shows it


#: The settings, checked against librdkafka's CONFIGURATION.md and Kafka's producer and
#: consumer configuration docs (the sources are listed in the chapter that prints them).
SETTINGS: tuple[Setting, ...] = (
    Setting("producer", "acks", "request.required.acks",
            "how many replicas hold a write before it is acknowledged", "01"),
    Setting("producer", "enable.idempotence", "enable.idempotence",
            "whether a retried batch can be stored twice (and reordered)", "02, 03"),
    Setting("consumer", "enable.auto.commit", "enable.auto.commit",
            "whether offsets are committed by a background timer", "02"),
    Setting("consumer", "auto.commit.interval.ms", "auto.commit.interval.ms",
            "how often that timer commits", "02"),
    Setting("consumer", "enable.auto.offset.store", "enable.auto.offset.store",
            "which offset the timer commits: librdkafka stores each message's offset when "
            "it hands it to the application; Java commits what the previous poll() "
            "returned", "02"),
    Setting("consumer", "isolation.level", "isolation.level",
            "whether records of aborted and still-open transactions are read", "04"),
    Setting("consumer", "auto.offset.reset", "auto.offset.reset",
            "where a group with no committed offset starts", "02"),
)

#: What the Java client does where it has no setting of that name.
JAVA_HAS_NO = ("(no such setting: auto-commit commits the offsets of the records the "
               "previous poll() returned)")


class DefaultsUnavailable(LabError):
    """A client's defaults could not be read; the message says which and why."""


# --- librdkafka ---------------------------------------------------------------------------

def _librdkafka_path() -> str:
    """The librdkafka shared library confluent-kafka itself loaded (Linux: from
    /proc/self/maps), else the one its wheel ships, else the system's."""
    import confluent_kafka  # noqa: F401 -- loads the library into this process

    maps = Path("/proc/self/maps")
    if maps.exists():
        for line in maps.read_text().splitlines():
            path = line.split()[-1] if line.split() else ""
            if "librdkafka" in os.path.basename(path):
                return path
    pkg = Path(confluent_kafka.__file__).parent
    for pattern in (str(pkg.parent / "confluent_kafka.libs" / "librdkafka*"),
                    str(pkg / ".dylibs" / "librdkafka*")):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    system = ctypes.util.find_library("rdkafka")
    if system:
        return system
    raise DefaultsUnavailable("librdkafka's shared library was not found (looked in "
                              "/proc/self/maps, confluent_kafka.libs, .dylibs and the "
                              "system's library path)")


def _dump(lib: ctypes.CDLL, kind: str) -> dict[str, str]:
    new, dump, destroy = (getattr(lib, f"rd_kafka_{kind}_{f}")
                          for f in ("new", "dump", "destroy"))
    new.restype = ctypes.c_void_p
    dump.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    dump.restype = ctypes.POINTER(ctypes.c_char_p)
    destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_conf_dump_free.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
    conf = new()
    n = ctypes.c_size_t()
    arr = dump(conf, ctypes.byref(n))
    try:
        items = [arr[i].decode() for i in range(n.value)]
    finally:
        lib.rd_kafka_conf_dump_free(arr, n)
        destroy(conf)
    return dict(zip(items[0::2], items[1::2], strict=True))


@lru_cache(maxsize=1)
def librdkafka_defaults() -> dict[str, str]:
    """Every property of a fresh librdkafka configuration (global and topic-level), as
    the loaded library reports it, plus ``version``."""
    import confluent_kafka

    lib = ctypes.CDLL(_librdkafka_path())
    lib.rd_kafka_version_str.restype = ctypes.c_char_p
    version = lib.rd_kafka_version_str().decode()
    if version != confluent_kafka.libversion()[0]:
        raise DefaultsUnavailable(f"found librdkafka {version}, but confluent-kafka uses "
                                  f"{confluent_kafka.libversion()[0]}")
    # Global properties win: the topic-level dump also holds legacy properties of the
    # same name (auto.commit.interval.ms 60000 "used by the simple legacy consumer only").
    out = {**_dump(lib, "topic_conf"), **_dump(lib, "conf")}
    out["version"] = version
    return out


# --- the Java client ----------------------------------------------------------------------

_ENTRY = re.compile(r'<h4><a id="([^"]+)"></a>.*?<th>Default:</th><td>(.*?)</td>', re.S)


def parse_config_html(text: str) -> dict[str, str]:
    """``name -> default`` from the HTML table a Kafka ``*Config.main`` prints."""
    return {name: html.unescape(re.sub(r"<[^>]+>", "", value)).strip()
            for name, value in _ENTRY.findall(text)}


@lru_cache(maxsize=1)
def java_defaults() -> dict[str, dict[str, str]]:
    """``{"producer": {...}, "consumer": {...}}`` from the pinned kafka-clients jar, plus
    ``{"version": ...}`` under ``"client"``."""
    from ...runtime.classpaths import kafka_libs
    from ...runtime.jars import KAFKA_VERSION
    from ...runtime.java import find_java

    libs = kafka_libs(fetch=False)
    out: dict[str, dict[str, str]] = {"client": {"version": KAFKA_VERSION}}
    for role, cls in (("producer", "org.apache.kafka.clients.producer.ProducerConfig"),
                      ("consumer", "org.apache.kafka.clients.consumer.ConsumerConfig")):
        try:
            proc = subprocess.run([find_java(), "-cp", f"{libs}/*", cls],
                                  capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as exc:
            raise DefaultsUnavailable(f"{cls} did not print its table within 120 s") from exc
        parsed = parse_config_html(proc.stdout)
        if proc.returncode != 0 or not parsed:
            raise DefaultsUnavailable(f"{cls} (classpath {libs}/*) exited "
                                      f"{proc.returncode} with no config table: "
                                      f"{proc.stderr.strip()[-300:]}")
        out[role] = parsed
    return out


def _rdkafka_value(raw: dict[str, str], name: str) -> str:
    value = raw[name]
    aliases = {("request.required.acks", "-1"): "all (-1)",
               ("auto.offset.reset", "largest"): "latest (largest)",
               ("auto.offset.reset", "smallest"): "earliest (smallest)"}
    return aliases.get((name, value), value)


def rows(librdkafka: dict[str, str] | None = None,
         java: dict[str, dict[str, str]] | None = None) -> list[dict[str, Any]]:
    """One row per :data:`SETTINGS` entry: the setting, both clients' defaults, what it
    decides. Pass the two dumps to build the table from recorded ones (tests)."""
    rd = librdkafka if librdkafka is not None else librdkafka_defaults()
    jv = java if java is not None else java_defaults()
    out = []
    for s in SETTINGS:
        java_value = jv[s.role].get(s.java, JAVA_HAS_NO)
        if s.librdkafka is None or s.librdkafka not in rd:
            raise DefaultsUnavailable(f"librdkafka {rd.get('version', '?')} has no "
                                      f"property {s.librdkafka!r}")
        out.append({"role": s.role, "setting": s.java,
                    f"librdkafka {rd.get('version', '')}".strip(): _rdkafka_value(
                        rd, s.librdkafka),
                    f"Java client {jv.get('client', {}).get('version', '')}".strip():
                        java_value,
                    "decides": s.decides, "chapter": s.chapter})
    return out


def table() -> Any:
    """:func:`rows` as a pandas DataFrame (what a chapter displays)."""
    import pandas as pd

    return pd.DataFrame(rows())
