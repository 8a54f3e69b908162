"""``make test``'s scheduler (tests/scheduling.py), driven as xdist's controller drives it:
stand-in workers that record what they are sent and report each test done."""

from __future__ import annotations

from types import SimpleNamespace

from tests.scheduling import ALONE, WEIGHTS, ModuleScheduling, unit_of, weight_of

CHAPTER = "tests/labs/test_chapters.py::test_chapter_demonstrates_its_claim"
COLLECTION = [
    f"{CHAPTER}[01_at_most_once]",
    f"{CHAPTER}[05_spark_pipeline]",
    "tests/integration/grade/test_grade_calibration.py::test_grader_calibration[02]",
    f"{CHAPTER}[02_at_least_once]",
    f"{CHAPTER}[04_transactions]",
    f"{CHAPTER}[07_exactly_once_sources]",
    "tests/integration/cluster/test_docker.py::TestCluster::test_a",
    "tests/integration/cluster/test_docker.py::TestCluster::test_b",
    "tests/integration/cluster/test_docker.py::test_c",
    "tests/integration/spark/test_inspector.py::test_a",
    "tests/integration/spark/test_inspector.py::test_b",
    "tests/labs/test_chapters.py::test_notebooks_are_stored_without_outputs[00_tour.ipynb]",
    "tests/labs/test_chapters.py::test_notebooks_are_stored_without_outputs[01.ipynb]",
    "tests/unit/test_x.py::test_a",
    "tests/unit/test_x.py::test_b",
]


class Worker:
    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []  # indices into the collection, in the order sent
        self.done = 0

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return self.name


def scheduler(workers: list[Worker], collection: list[str] = COLLECTION) -> ModuleScheduling:
    config = SimpleNamespace(getvalue=lambda name: [f"{len(workers)}*popen"],
                             option=SimpleNamespace(loadscopereorder=False))
    sched = ModuleScheduling(config, log=None)
    for w in workers:
        sched.add_node(w)
        sched.add_node_collection(w, collection)
    sched.schedule()
    return sched


def run_all(sched: ModuleScheduling, workers: list[Worker]) -> dict[str, list[str]]:
    """Each worker in turn completes the oldest test it holds, as xdist would report it;
    returns the node ids each ran. A worker runs a test only while holding the next one
    (or shutting down): checked at every step."""
    ran: dict[str, list[str]] = {w.name: [] for w in workers}
    while any(w.done < len(w.sent) for w in workers):
        for w in workers:
            if w.done == len(w.sent):
                continue
            assert len(w.sent) - w.done >= 2 or w.shutting_down, \
                f"{w} holds its last test and would wait for more forever"
            index = w.sent[w.done]
            w.done += 1
            ran[w.name].append(COLLECTION[index])
            sched.mark_test_complete(w, index)
    return ran


def test_a_module_goes_to_one_worker_and_a_minutes_long_test_is_a_unit_of_its_own():
    workers = [Worker("gw0"), Worker("gw1"), Worker("gw2")]
    ran = run_all(scheduler(workers), workers)
    assert sorted(t for tests in ran.values() for t in tests) == sorted(COLLECTION)
    where = {t: w for w, tests in ran.items() for t in tests}
    for module in ("tests/integration/cluster/test_docker.py",
                   "tests/integration/spark/test_inspector.py", "tests/unit/test_x.py",
                   "tests/labs/test_chapters.py::test_notebooks"):
        assert len({w for t, w in where.items() if t.startswith(module)}) == 1, module
    # The three long tests went out first, one to each worker.
    assert len({where[t] for t in COLLECTION[:3]}) == 3
    assert all(w.shutting_down for w in workers)


def test_a_worker_holds_at_most_two_units():
    """A worker gets its next unit when it is down to its last test, not before: a
    chapter handed out early would wait behind a module while another worker idles."""
    order = [COLLECTION[0], *COLLECTION[6:9], *COLLECTION[3:6], *COLLECTION[1:3]]
    workers = [Worker("gw0"), Worker("gw1")]
    sched = scheduler(workers, order)
    steps = 0
    while any(w.done < len(w.sent) for w in workers):
        for w in workers:
            held = {unit_of(order[i]) for i in w.sent[w.done:]}
            assert len(held) <= 2, (w, held)
            if w.done < len(w.sent):
                index = w.sent[w.done]
                w.done += 1
                sched.mark_test_complete(w, index)
        steps += 1
    assert steps >= 3


def test_units_and_weights():
    assert unit_of(f"{CHAPTER}[00_tour]") == f"{CHAPTER}[00_tour]"
    assert unit_of("tests/integration/test_matrix.py::test_x[A]") == \
        "tests/integration/test_matrix.py"
    assert unit_of("tests/integration/cluster/test_docker.py::TestCluster::test_a") == \
        "tests/integration/cluster/test_docker.py"
    assert weight_of("tests/integration/test_matrix.py::test_x[A]") == \
        WEIGHTS["tests/integration/test_matrix.py"]
    assert weight_of("tests/unit/test_x.py::test_a") == 0
    # Every weighted unit is one the scheduler makes: a module, or an ALONE test.
    for key in WEIGHTS:
        assert key.startswith(ALONE) or "::" not in key, key
