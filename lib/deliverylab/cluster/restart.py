"""A node's restart: stop it, start it again, wait until it is back -- and when its
start-up stalls, keep the evidence and start it once more.

Why a module of its own: a restart is the one fault whose recovery waits on a broker's
whole start-up (log recovery after a kill, catching up with the metadata log, being
unfenced), and twice in cold test runs on loaded machines a restarted node's log stopped
mid-start-up -- its coordinators had started, it had not yet applied the metadata -- and
said nothing more for 60 s. The cause was not seen (nothing was kept), so a stalled
start-up now leaves its evidence: the JVM's thread dump (SIGQUIT makes the JVM print
every thread's stack to its log, and goes on running), of which the threads that say
where start-up waits are quoted in a :class:`RestartRetried` warning. Then the node is
killed and started once more: a student's Heal button should heal, and a second stall
raises, with both stalls named.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from ..errors import ClusterNotReady, TimedOut
from ..process.children import tail
from ..waiting import wait_until
from . import ready

#: Threads whose stacks say where a broker's start-up waits: the main thread (it waits
#: on each start-up step in turn), the metadata loader and its publishers (they apply
#: the metadata log), the lifecycle manager (registration, unfencing), and any thread
#: blocked on a lock.
TELLING = re.compile(r'^"(main|[^"]*metadata-loader[^"]*|[^"]*lifecycle-manager[^"]*)"'
                     r"|java\.lang\.Thread\.State: BLOCKED")
#: Frames quoted per thread, and threads quoted at most.
FRAMES, THREADS = 12, 6
#: The least a second start is given, seconds: the first start's ``timeout`` says how
#: soon to call a start stalled, but the start after it is the heal itself (a student's
#: Heal button, a test's recovery), on a host that may be why the first one stalled.
SECOND_START_S = 60.0


class RestartRetried(UserWarning):
    """A restarted node's start-up stalled; it was killed and started once more. The
    message quotes the stalled JVM's telling threads."""


def restart(cluster: Any, node: int, timeout: float) -> None:
    """Stop ``node`` (gracefully if it is running) and start it again; return once it
    is back in the cluster metadata. A start-up that has not said "Kafka Server
    started" within ``timeout`` is dumped, killed and started once more, with at least
    :data:`SECOND_START_S` for that start and its return to the metadata."""
    backend = cluster.backend
    stop(backend, node)
    deadline = ready.Deadline(timeout)
    try:
        _start(cluster, node, deadline)
    except ClusterNotReady as stalled:
        said = tail(backend.log_path(node), 2)  # what start-up waited for, before the dump
        threads = thread_dump(backend, node)
        warnings.warn(RestartRetried(
            f"node {node}'s start-up stalled: its log did not say \"Kafka Server started\" "
            f"within {timeout:g} s; killed and started again. Its log ended:\n{said}\n"
            f"Its threads then:\n{threads}"), stacklevel=3)
        stop(backend, node, graceful=False)
        deadline = ready.Deadline(max(timeout, SECOND_START_S))
        try:
            _start(cluster, node, deadline)
        except ClusterNotReady as again:
            raise ClusterNotReady(f"{again} (a second start: the first stalled too, its "
                                  f"threads then:\n{threads})") from stalled
    ready.wait_until(f"node {node} back in the cluster metadata",
                     lambda: node in cluster.live_brokers(), deadline, cluster._check_alive,
                     explain=cluster._why_stuck)


def stop(backend: Any, node: int, graceful: bool = True) -> None:
    """Stop the node's process if it runs: SIGTERM first when ``graceful``, SIGKILL
    when it does not exit in 20 s (a paused node is resumed, or TERM would wait)."""
    if backend.exit_code(node) is not None:
        return
    backend.signal(node, "resume")
    if graceful:
        backend.signal(node, "term")
        if backend.wait_exit(node, 20):
            return
    backend.signal(node, "kill")
    backend.wait_exit(node, 10)


def _start(cluster: Any, node: int, deadline: ready.Deadline) -> None:
    """Launch the node and wait for the *new* process to say it started (the dead one
    may still be listed until its session times out). A node that started but is not
    back in the metadata is a cluster's problem, not a stalled start: :func:`restart`
    waits for that after, and never retries it."""
    backend = cluster.backend
    started = starts(backend, node)
    backend.launch(node)
    cluster.states[node] = "up"
    ready.wait_until(f"node {node} restarted (its log says the server started)",
                     lambda: starts(backend, node) > started, deadline, cluster._check_alive,
                     explain=lambda: f"; its log ends:\n{tail(backend.log_path(node), 5)}")


def starts(backend: Any, node: int) -> int:
    """How many times the node's log says its server started (restarts append)."""
    try:
        return backend.log_path(node).read_text(errors="replace").count("Kafka Server started")
    except OSError:
        return 0


def thread_dump(backend: Any, node: int, timeout: float = 10.0) -> str:
    """Ask the node's JVM for its thread dump (SIGQUIT: the JVM prints it to its log and
    runs on) and return the telling threads' stacks, or a line saying why there are none."""
    def log() -> str:
        try:
            return backend.log_path(node).read_text(errors="replace")
        except OSError:
            return ""

    before = log().count("Full thread dump")
    backend.signal(node, "dump")

    def dumped() -> str | None:  # the dump's end, "JNI global refs", comes last
        text = log()
        last = text[text.rfind("Full thread dump"):]
        return last if text.count("Full thread dump") > before and \
            "JNI global refs" in last else None

    try:
        return telling_threads(wait_until(f"node {node}'s thread dump in its log", dumped,
                                          timeout, interval=0.2))
    except TimedOut:  # the evidence is missing, the retry is still worth it
        return f"(no thread dump in its log within {timeout:g} s)"


def telling_threads(dump: str) -> str:
    """The stacks in a JVM thread dump that say where a start-up waits (:data:`TELLING`),
    each cut to :data:`FRAMES` frames, at most :data:`THREADS` of them."""
    out = []
    for block in re.split(r"\n\s*\n", dump):
        lines = block.strip("\n").splitlines()
        if lines and lines[0].startswith('"') and any(TELLING.search(ln) for ln in lines[:2]):
            out.append("\n".join(lines[:2 + FRAMES]))
    return "\n\n".join(out[:THREADS]) or "(the thread dump names no telling thread)"
