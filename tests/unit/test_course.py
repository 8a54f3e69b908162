"""The course runner and the chapters' small helpers, without brokers or kernels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab import course
from deliverylab.chapter import (
    Chapter,
    Saw,
    acked_between,
    parse_segments,
    plan,
    self_check,
    what_you_saw,
)
from deliverylab.checker import check
from deliverylab.errors import BadValue
from deliverylab.history import History, Read

LABS = Path(__file__).resolve().parents[2] / "labs"

# --- the results file --------------------------------------------------------------------


def test_chapter_writes_its_results_file_and_passes(tmp_path):
    path = tmp_path / "out" / "02.json"
    ch = Chapter("02_at_least_once", "A lost ack makes a duplicate.", path)
    ch.observe(duplicates=2, pressed=["Lose an ack"])
    assert ch.expect("a lost ack made a duplicate", 2 >= 1)
    record = ch.finish()
    saved = json.loads(path.read_text())
    assert saved == record
    assert saved["chapter"] == "02_at_least_once" and saved["pass"] is True
    assert saved["observed"] == {"duplicates": 2, "pressed": ["Lose an ack"]}
    assert saved["checks"] == [{"what": "a lost ack made a duplicate", "pass": True}]
    assert isinstance(saved["seconds"], float) and saved["seconds"] >= 0


def test_a_failed_claim_is_written_first_then_raised(tmp_path):
    path = tmp_path / "03.json"
    ch = Chapter("03_idempotent_producer", "No duplicate.", path)
    ch.expect("no duplicate", False)
    ch.expect("nothing lost", True)
    with pytest.raises(AssertionError, match="the claim did not hold: no duplicate"):
        ch.finish()
    saved = json.loads(path.read_text())
    assert saved["pass"] is False
    assert [c["pass"] for c in saved["checks"]] == [False, True]


def test_a_chapter_without_checks_fails(tmp_path):
    ch = Chapter("x", "claim", tmp_path / "x.json")
    with pytest.raises(AssertionError, match="no check"):
        ch.finish()
    assert json.loads((tmp_path / "x.json").read_text())["pass"] is False


# --- "what you saw" and self-checks ---------------------------------------------------------


def _result_with_a_duplicate():
    h = History()
    h.record("p", "send", "ok", ["p:0"], topic="t", partition=0, offset=0)
    reads = [Read("t", 0, 0, "p:0"), Read("t", 0, 1, "p:0")]
    return check(h, reads, allowed={"duplicates"})


def test_what_you_saw_is_generated_from_results():
    result = _result_with_a_duplicate()
    saw = what_you_saw(lost_ack=result, note="2 copies")
    assert isinstance(saw, Saw)
    text = str(saw)
    assert "lost ack: " + result.summary() in text
    assert "note: 2 copies" in text
    assert "1 value was stored more than once" in saw._repr_markdown_()


def test_self_check(capsys):
    self_check(3, 3, "the count")
    assert capsys.readouterr().out == "Correct: the count is 3.\n"
    with pytest.raises(AssertionError, match="set `answer`"):
        self_check(None, 3, "the count")
    with pytest.raises(AssertionError, match="answer=2, but the count is 3. Hint: look"):
        self_check(2, 3, "the count", "look")


# --- schedules -------------------------------------------------------------------------------


def test_plan_spreads_bare_names_evenly_and_keeps_explicit_counts():
    assert plan([], 100) == []
    assert plan(["lose_ack"], 60) == [(30, "lose_ack")]
    assert plan(["a", "b", "c"], 60) == [(15, "a"), (30, "b"), (45, "c")]
    assert plan([{"fault": "heal", "sent": 50}, "a"], 60) == [(30, "a"), (50, "heal")]
    assert plan(["heal", "heal"], 30) == [(10, "heal"), (20, "heal")]
    with pytest.raises(BadValue):
        plan([{"fault": "heal", "sent": 99}], 60)
    with pytest.raises(BadValue):
        plan([42], 60)


def test_acked_between():
    h = History()
    h.record("p", "send", "ok", ["p:0"], topic="t", time=1.0)
    h.record("p", "send", "info", ["p:1"], topic="t", time=2.0)
    h.record("p", "send", "ok", ["p:2"], topic="t", time=3.0)
    h.record("p", "send", "ok", ["p:3"], topic="u", time=3.0)
    assert acked_between(h, 1.5, 3.0, "t") == ["p:2"]
    assert acked_between(h, 0, 9) == ["p:0", "p:2", "p:3"]


# --- the log on disk -----------------------------------------------------------------------

DUMP = """\
Dumping /tmp/x/node-1/data/t-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 7 \
producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: true isControl: false \
deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 100 size: 139 magic: 2 \
compresscodec: none crc: 520232546 isvalid: true
| offset: 0 CreateTime: 100 keySize: 4 valueSize: 40 sequence: 0 headerKeys: [] key: shop \
payload: {"producer":"shop","seq":0,"payload":""}
baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 \
producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: true isControl: true \
deleteHorizonMs: OptionalLong.empty position: 139 CreateTime: 101 size: 78 magic: 2 \
compresscodec: none crc: 1 isvalid: true
| offset: 1 CreateTime: 101 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] \
endTxnMarker: COMMIT coordinatorEpoch: 0
"""


def test_parse_segments_reads_records_batches_and_markers():
    rows = parse_segments(DUMP)
    assert [r["offset"] for r in rows] == [0, 1]
    first, marker = rows
    assert first["producer_id"] == 7 and first["producer_epoch"] == 2
    assert first["sequence"] == 0 and first["transactional"] and not first["control"]
    assert first["value"] == "shop:0" and first["marker"] is None
    assert first["crc"] == 520232546 and first["create_time"] == 100
    assert marker["control"] and marker["marker"] == "COMMIT" and marker["value"] is None


# --- the course runner -------------------------------------------------------------------------


def test_discover_and_select():
    names = ["00_tour", "01_at_most_once", "02_at_least_once"]
    assert course.select(names, []) == names
    assert course.select(names, ["02", "00_tour"]) == ["00_tour", "02_at_least_once"]
    with pytest.raises(BadValue, match="one of 00_tour"):
        course.select(names, ["09"])
    with pytest.raises(BadValue, match="exactly one"):
        course.select(names, ["0"])


def test_the_chapters_are_discovered_in_course_order():
    found = course.discover(LABS)
    assert found == sorted(found)
    for name in ("01_at_most_once", "02_at_least_once", "03_idempotent_producer",
                 "04_transactions"):
        assert name in found


def test_parameters_carry_schedule_size_and_results_path(tmp_path):
    p = course.parameters("02_at_least_once", small=True, results_path=tmp_path / "r.json")
    assert p["faults"] == ["lose_ack"] and p["messages"] == 60
    assert p["results_path"] == str(tmp_path / "r.json")
    full = course.parameters("02_at_least_once", small=False, results_path=tmp_path / "r")
    assert "messages" not in full and full["faults"] == ["lose_ack"]
    assert course.parameters("99_unknown", True, tmp_path / "r") == {
        "results_path": str(tmp_path / "r")}


def test_small_and_headless_parameters_exist_in_the_notebooks():
    """A parameter the notebook does not declare would be silently ignored by papermill."""
    import nbformat

    for chapter in set(course.SMALL) | set(course.HEADLESS):
        path = LABS / f"{chapter}.ipynb"
        if not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        [cell] = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        declared = {line.split("=")[0].strip() for line in cell.source.splitlines()
                    if "=" in line and not line.lstrip().startswith("#")}
        wanted = set(course.SMALL.get(chapter, {})) | set(course.HEADLESS.get(chapter, {}))
        assert wanted | {"results_path"} <= declared, (chapter, wanted - declared)


def _run(chapter, passed=True, seconds=12.5, error=None, observed=None):
    results = {"chapter": chapter, "claim": f"claim of {chapter}",
               "observed": observed or {"lost": 0, "duplicates": 3, "flag": True},
               "checks": [{"what": "dup seen", "pass": passed}], "pass": passed,
               "seconds": seconds}
    return course.ChapterRun(chapter, error is None, 99.0, results, error)


def test_table_has_one_row_per_chapter_with_verdict_and_time():
    runs = [_run("01_at_most_once"), _run("02_at_least_once", passed=False),
            course.ChapterRun("03_idempotent_producer", False, 42.0, None, "KeyError: x")]
    text = course.table(runs)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["chapter", "claim", "result", "time"]
    assert len(lines) == 2 + 3
    assert "01_at_most_once" in lines[2] and "PASS" in lines[2] and "12 s" in lines[2]
    assert "lost=0 duplicates=3 flag=yes" in lines[2]
    assert "FAIL" in lines[3] and "<< dup seen" in lines[3]
    assert "FAIL" in lines[4] and "42 s" in lines[4] and "KeyError: x" in lines[4]


def test_a_run_passes_only_with_a_passing_results_file():
    assert _run("a").passed
    assert not _run("a", passed=False).passed
    assert not _run("a", error="boom").passed
    assert not course.ChapterRun("a", True, 1.0, None).passed
    assert course.ChapterRun("a", True, 7.0, {"pass": True}).seconds == 7.0  # no seconds


def test_observed_text():
    assert course.observed_text(None) == "-"
    assert course.observed_text({"a": [1, 2], "b": 0.5}) == "a=[1,2] b=0.5"
    assert course.observed_text({"a": "x" * 50}, width=10) == "a=xxxxx..."


def test_main_without_notebooks_says_so(tmp_path, capsys):
    assert course.main(["--labs", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no chapter notebooks" in capsys.readouterr().err


def test_main_prints_the_table_and_fails_if_a_chapter_failed(tmp_path, monkeypatch, capsys):
    for name in ("01_a", "02_b"):
        (tmp_path / f"{name}.ipynb").write_text("{}")

    def fake_run(chapter, out, labs, small, html, kernel):
        assert small and not html
        return _run(chapter, passed=chapter == "01_a")

    monkeypatch.setattr(course, "run_chapter", fake_run)
    code = course.main(["--labs", str(tmp_path), "--out", str(tmp_path / "o"), "--small",
                        "--no-html"])
    out = capsys.readouterr().out
    assert code == 1
    assert "1/2 chapters passed" in out and "01_a" in out and "02_b" in out


# --- the stream: scheduled presses land at their counts ---------------------------------------


class _Press:
    def __init__(self, name, sent, ok=True):
        self.name, self.sent, self.ok = name, sent, ok
        self.error = None if ok else RuntimeError(f"{name} failed")

    def line(self):
        return f"{self.name}@{self.sent}"


class _Panel:
    def __init__(self, stream_ref, fail=()):
        self.stream_ref, self.fail, self.pressed = stream_ref, set(fail), []

    def spec(self, name):
        if name not in ("lose_ack", "heal"):
            raise BadValue(f"no button {name}")

    def press(self, name):
        press = _Press(name, self.stream_ref[0].sent, ok=name not in self.fail)
        self.pressed.append(press)
        return press


class _Workload:
    def run(self, count, start_seq=0, on_sent=None):
        import time as _time

        from deliverylab.workload import ProduceReport

        for n in range(1, count + 1):
            on_sent(n)
            _time.sleep(0.002)
        return ProduceReport("fake", sent=count, acked=count)


def test_stream_presses_the_schedule_at_its_counts(capsys):
    from deliverylab.chapter import Stream

    ref = []
    panel = _Panel(ref)
    stream = Stream(_Workload(), 90, panel=panel, faults=["lose_ack", "heal"])
    ref.append(stream)
    report = stream.start().wait(timeout=30)
    assert report.acked == 90 and not stream.running
    assert [p.name for p in panel.pressed] == ["lose_ack", "heal"]
    assert panel.pressed[0].sent >= 30 and panel.pressed[1].sent >= 60
    out = capsys.readouterr().out
    assert "scheduled presses: 'lose_ack' after 30, 'heal' after 60" in out
    assert "producing: 90/90" in out


def test_stream_refuses_unknown_buttons_and_reraises_a_failed_press():
    from deliverylab.chapter import Stream

    with pytest.raises(BadValue):
        Stream(_Workload(), 10, panel=_Panel([]), faults=["kill_everything"])
    with pytest.raises(BadValue):
        Stream(_Workload(), 10, faults=["lose_ack"])  # a schedule needs a panel
    ref = []
    stream = Stream(_Workload(), 20, panel=_Panel(ref, fail={"lose_ack"}),
                    faults=["lose_ack", "heal"])
    ref.append(stream)
    with pytest.raises(RuntimeError, match="lose_ack failed"):
        stream.start().wait(timeout=30)
