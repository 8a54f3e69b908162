"""The shared cluster stops before a long unit that does not use it, and only then."""

from __future__ import annotations

from types import SimpleNamespace

from tests.shared_cluster import SharedCluster

CAL = "tests/integration/grade/test_grade_calibration.py"
CH = "tests/labs/test_chapters.py"


class Stub:
    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def items(*specs: tuple[str, str, bool]) -> list[SimpleNamespace]:
    """(module, test, uses the cluster) -> stand-ins of pytest items of one session."""
    session = SimpleNamespace(items=[])
    for module, test, uses in specs:
        session.items.append(SimpleNamespace(
            module=module, nodeid=f"{module}::{test}", session=session,
            fixturenames=["request", "cluster", "cluster3"] if uses else ["request"]))
    return session.items


SESSION = items(
    (CAL, "test_grader_calibration[06]", True),
    (CH, "test_chapter_demonstrates_its_claim[01_at_most_once]", False),
    (CH, "test_chapter_demonstrates_its_claim[03_idempotent_producer]", False),
    ("tests/integration/test_matrix.py", "test_a", True),
    ("tests/integration/test_matrix.py", "test_b", False),
    ("tests/unit/test_x.py", "test_unit", False),
    (CAL, "test_grader_calibration[04]", True),
)


def shared() -> tuple[SharedCluster, list[Stub]]:
    made: list[Stub] = []
    return SharedCluster(start=lambda: made.append(Stub()) or made[-1]), made


def test_it_starts_on_first_use_and_is_kept_while_used():
    keeper, made = shared()
    assert keeper.cluster is None and made == []  # nothing until a test asks
    first = keeper.get()
    assert keeper.get() is first and len(made) == 1
    keeper.stop_before(SESSION[0], SESSION[6])  # the next unit uses it too
    assert not first.stopped and keeper.cluster is first


def test_it_stops_before_a_long_unit_that_does_not_use_it_and_starts_again():
    keeper, made = shared()
    first = keeper.get()
    keeper.stop_before(SESSION[0], SESSION[1])  # chapter 01: minutes, its own cluster
    assert first.stopped and keeper.cluster is None
    again = keeper.get()
    assert again is not first and not again.stopped and len(made) == 2


def test_it_is_kept_within_a_module_and_before_short_or_unmeasured_units():
    keeper, made = shared()
    first = keeper.get()
    keeper.stop_before(SESSION[3], SESSION[4])  # same module: its fixture still holds it
    keeper.stop_before(SESSION[4], SESSION[5])  # unit tests: weight 0, seconds
    keeper.stop_before(SESSION[1], SESSION[2])  # chapter to chapter: one module
    assert not first.stopped
    keeper.stop_before(SESSION[6], None)  # the worker's last test: the session's end stops it
    assert not first.stopped


def test_nothing_started_nothing_stopped():
    keeper, made = shared()
    keeper.stop_before(SESSION[0], SESSION[1])
    keeper.stop()
    assert made == [] and keeper.cluster is None
