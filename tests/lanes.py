"""The solo part's lanes: which of the tests marked ``solo`` may run side by side.

``make test`` (scripts/test-suite.sh) runs the ``solo`` tests after the parallel part:
first those also marked ``alone`` (chapter 08's throughput ratios) with nothing beside
them, then the rest in two lanes side by side: one pytest process per lane marker
(``lane_host``, ``lane_docker``), its tests one after another in collection order. (Not
pytest-xdist's ``--dist loadgroup``: with pytest 9.2 it no longer groups, pytest-xdist
issue 1386.) Every ``solo`` test is ``alone`` or in exactly one lane (tests/conftest.py
checks). Two tests that must not overlap share a lane:

* :data:`DOCKER`, what runs on the Docker engine: the compose lab judges its chapter's
  clean-up by every lab container on the engine (tests/integration/test_docker_lab.py),
  the Docker hub every container and network of its class (test_hub_docker.py). Their
  JVMs and Spark drivers run in containers, each with a ``/tmp`` of its own. The course
  book (tests/browser/test_book.py, Chromium reading files) goes at its end: it is light
  and may share the machine, and it reads chapter 08's run, done before.
* :data:`HOST`, what judges the host itself: the three-student hub (Unix users, their
  processes and files found by uid, a network namespace and a cgroup each) and the
  comparison of the shared ``/tmp`` (test_temp_files.py), which would count the hub
  students' JVMs as its own run's. Neither starts a container; the hub's network is
  10.200-249.x, not Docker's, and its iptables rules match only that.

Why the hub goes beside the Docker lane only on some hosts: every process in the lab's and
the broker's containers runs as uid 1000, and on the host a uid is a uid. The hub
creates its students with ``useradd``, which gives the first one uid 1000 when no user
of the host has it; that student's server stop would then SIGKILL every process of uid
1000 (the containers' too) and delete every file of it under ``/tmp`` (the compose lab
writes its results there), and the containers' processes would count as the student's.
So when uid 1000 has no owner in the host's user list, :data:`HOST` is :data:`DOCKER` and
the solo part runs as one lane, as before.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from deliverylab.classroom.hub.docker import LAB_UID

#: The uid of every process in the lab image (LAB_UID) and the broker image
#: (docker/broker-image.sh: ``useradd --uid 1000 appuser``).
CONTAINER_UID = LAB_UID


def uid_has_owner(uid: int) -> bool:
    """Does a user of this host hold ``uid`` (so ``useradd`` never hands it out)?"""
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


DOCKER = pytest.mark.lane_docker
HOST = pytest.mark.lane_host if uid_has_owner(CONTAINER_UID) else DOCKER
#: The lane markers, for the check that every solo test has one (or is ``alone``).
LANES = ("lane_host", "lane_docker")

#: scripts/test-suite.sh names a file here for its parallel part: its collection
#: (tests/conftest.py) writes which modules hold the solo part's tests, so that each pytest
#: of the solo part (08 alone, then one per lane) collects those few modules, not the whole
#: suite's ~1,700 tests (15-20 s of each one's start, on two loaded cores, in a cold run).
SOLO_LIST = "DELIVERYLAB_SOLO_LIST"


def write_solo_list(path: Path, solo: set[tuple[str, str]]) -> None:
    """``kind<TAB>module`` lines for ``(kind, module)`` pairs (kind: ``alone`` or a lane
    marker), sorted. Every xdist worker collects alike and writes the same file; each
    replaces it whole, so the script never reads half of one."""
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    partial.write_text("".join(f"{kind}\t{module}\n" for kind, module in sorted(solo)))
    partial.replace(path)
