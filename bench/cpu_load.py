"""CPU hogs beside a benchmark: the loaded machine a classroom host or a CI runner is.

A margin measured on an idle machine is a flaky test waiting; the benches that judge
claims under load start their hogs here (``stress-ng --cpu N``, Debian's package), so
"loaded 2x" means the same thing in each of them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def start_load(hogs: int) -> subprocess.Popen | None:
    """``hogs`` CPU-bound workers until terminated (None for 0)."""
    if hogs <= 0:
        return None
    if shutil.which("stress-ng") is None:
        raise SystemExit("--load needs stress-ng (Debian: apt-get install -y stress-ng)")
    return subprocess.Popen(["stress-ng", "--cpu", str(hogs), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextmanager
def loaded(hogs: int, every: float = 10.0) -> Iterator[list[float]]:
    """Run the block with ``hogs`` CPU hogs; yields the 1-minute load averages sampled
    every ``every`` seconds meanwhile (filled as the block runs), so the report can say
    how loaded the machine really was."""
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            samples.append(os.getloadavg()[0])

    proc = start_load(hogs)
    sampler = threading.Thread(target=sample, name="loadavg", daemon=True)
    sampler.start()
    try:
        yield samples
    finally:
        done.set()
        sampler.join()
        if proc is not None:
            proc.terminate()
            proc.wait(10)
