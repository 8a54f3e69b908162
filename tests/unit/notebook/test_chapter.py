"""Chapter verdicts, "what you saw" and self-checks, without a cluster."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from deliverylab.checker import check
from deliverylab.errors import BadValue
from deliverylab.history import History, Read
from deliverylab.notebook.chapter import (
    CHAPTER_CLAIMS,
    Chapter,
    Saw,
    chapter_names,
    self_check,
    what_you_saw,
)

LABS = Path(__file__).resolve().parents[3] / "labs"
NOTEBOOKS = [LABS / f"{c}.ipynb" for c in chapter_names(LABS)]

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
    assert isinstance(saved["seconds"], float)


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


def test_self_check_never_shows_the_expected_value(capsys):
    self_check(3, 3, "the count")
    assert capsys.readouterr().out == "Correct: that is the count.\n"
    with pytest.raises(AssertionError, match="set `answer`"):
        self_check(None, 3, "the count")
    with pytest.raises(AssertionError) as wrong:
        self_check(2, 3, "the count", "look")
    assert str(wrong.value) == "answer=2 is not the count. Hint: look"
    assert "3" not in str(wrong.value)


def test_a_revealed_prediction_is_in_the_results_file(tmp_path: Path):
    ch = Chapter("00_tour", "claim", tmp_path / "r.json")
    ch.record_prediction({"name": "00_moved", "predicted": [0], "actual": [0], "right": True})
    ch.record_prediction({"name": "00_moved", "predicted": [1], "actual": [0], "right": False})
    ch.expect("x", True)
    ch.finish()
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["predictions"] == [{"name": "00_moved", "predicted": [1], "actual": [0],
                                     "right": False}]


# --- each chapter's claim: in the library, shown with the verdict only --------------------


def test_a_course_chapter_takes_its_claim_from_the_registry(tmp_path: Path):
    ch = Chapter("03_idempotent_producer", results_path=tmp_path / "03.json")
    assert ch.claim == CHAPTER_CLAIMS["03_idempotent_producer"].claim
    ch.expect("x", True)
    ch.finish()
    assert json.loads((tmp_path / "03.json").read_text())["claim"] == ch.claim


def test_a_chapter_outside_the_course_must_bring_its_claim():
    with pytest.raises(BadValue, match=r"name='99_mine' is not accepted; expected a chapter "
                                       r"of the course \(00_tour, .*09_kafka_bugs\), or give "
                                       r"its claim"):
        Chapter("99_mine")
    assert Chapter("99_mine", "my claim").claim == "my claim"


def test_every_chapter_of_the_labs_has_an_idea_and_a_claim():
    assert {p.stem for p in NOTEBOOKS} == set(CHAPTER_CLAIMS)
    for name, entry in CHAPTER_CLAIMS.items():
        assert entry.idea and entry.claim, name
        assert not _runs(entry.claim) & _runs(entry.idea), f"{name}: its idea tells its claim"


#: Outcome text moved out of a student's sight before the answer, by chapter: each may
#: stand only after the chapter's first reveal (a prediction's answer in a heading, a
#: figure title, or the list of bugs whose titles and fixes state the outcome).
AFTER_REVEAL: dict[str, tuple[str, ...]] = {
    "01_at_most_once": ("copy within milliseconds",),
    "03_idempotent_producer": ("does not cover", "a new producer"),
    "05_spark_pipeline": ("duplicates exactly that batch",),
    "07_exactly_once_sources": ("lines after the last committed offset",),
    "08_cost_of_guarantees": ("grows with the commit interval",),
    "09_kafka_bugs": ("committed by transaction 1", "kit.BUGS",
                      "lands in the next transaction"),
}

#: A run of this many words of a claim, found in a notebook, is the claim spelled there.
RUN = 6


def _words(text: str) -> list[str]:
    """Lower-case words, with a Python string's implicit concatenation across lines
    joined (``"... a "\n    "b ..."``), so that a claim split over lines still reads whole."""
    text = re.sub(r"\"\s*\n\s*f?\"", "", text)
    return re.findall(r"[a-z0-9_.=>/-]+", text.lower())


def _runs(text: str, n: int = RUN) -> set[str]:
    words = _words(text)
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def _cells(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]


def _answered_at(cells: list[str]) -> int:
    """The first cell that answers: the chapter's first reveal, else its verdict."""
    return next(i for i, s in enumerate(cells) if "dl.reveal(" in s or "chapter.finish(" in s)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_shows_its_claim_before_the_answer(path: Path):
    cells = _cells(path)
    claim = CHAPTER_CLAIMS[path.stem].claim
    calls = re.findall(r"dl\.Chapter\(([^()]*)\)", "\n".join(cells))
    assert calls and not [c for c in calls if "claim" in c], f"{path.name}: {calls}"
    everything = " ".join(_words("\n".join(cells)))
    assert " ".join(_words(claim)) not in everything, f"{path.name} spells its claim"
    before = _answered_at(cells)
    for i, source in enumerate(cells[:before]):
        spelled = _runs(source) & _runs(claim)
        assert not spelled, f"{path.name} cell {i}, before the answer: {sorted(spelled)}"
        assert "chapter.claim" not in source and "CHAPTER_CLAIMS" not in source, (path.name, i)


@pytest.mark.parametrize("chapter", sorted(AFTER_REVEAL))
def test_moved_outcome_text_stands_only_after_the_chapters_first_reveal(chapter: str):
    cells = _cells(LABS / f"{chapter}.ipynb")
    first = next(i for i, s in enumerate(cells) if "dl.reveal(" in s)
    for text in AFTER_REVEAL[chapter]:
        early = [i for i, s in enumerate(cells[:first]) if text in s]
        assert not early, f"{chapter}: {text!r} in cell(s) {early}, before the reveal ({first})"


# --- schedules -------------------------------------------------------------------------------


def test_the_readme_names_each_chapter_s_idea_never_its_claim():
    # The README is read before the chapters: its table gives each chapter's idea (the
    # registry's words) and its faults, and no claim -- a student predicts those first.
    readme = (LABS.parent / "README.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\d\d[a-z]?_\w+)` \|.*$",
                                                         readme, re.M)}
    assert set(rows) == set(CHAPTER_CLAIMS), "the README's chapter table lists the chapters"
    for name, entry in CHAPTER_CLAIMS.items():
        assert entry.idea in rows[name], f"{name}: the README's row is not its idea"
        assert not _runs(entry.claim) & _runs(rows[name]), f"{name}: the README tells its claim"
