"""A watchdog that kills a cluster's brokers when the Python process owning it dies.

A Jupyter kernel restart is a SIGKILL: no ``atexit`` handler, no ``finally`` runs. So
each cluster starts this tiny process with a pipe on its stdin. The owner writes
``watch <pid>``/``forget <pid>``/``cleanup <dir>``/``exec <json argv>`` lines; when the
pipe reaches EOF — which the kernel guarantees the moment the owner dies, however it
dies — the reaper SIGKILLs every watched process group, runs the ``exec`` commands in
order (the Docker backend's ``docker rm -f`` and ``docker network rm``: containers are
not our children, so killing processes is not enough) and removes the listed directories.

It runs in its own session so a Ctrl-C or a kernel interrupt does not reach it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys


def _kill_group(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
            return
        except (ProcessLookupError, PermissionError):
            continue


def main() -> None:
    watched: set[int] = set()
    dirs: list[str] = []
    commands: list[list[str]] = []
    for line in sys.stdin:
        verb, _, arg = line.strip().partition(" ")
        if verb == "watch":
            watched.add(int(arg))
        elif verb == "forget":
            watched.discard(int(arg))
        elif verb == "cleanup":
            dirs.append(arg)
        elif verb == "exec":
            commands.append(json.loads(arg))
        elif verb == "release":  # the owner stopped the cluster itself
            watched.clear()
            dirs.clear()
            commands.clear()
    for pid in watched:
        _kill_group(pid)
    for argv in commands:
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
        except (OSError, subprocess.SubprocessError):
            continue
    for path in dirs:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main()
