"""The course book in Chromium with the network off, as a student reads it before class.

All ten chapters, as the chapter tests (``tests/labs/test_chapters.py``) executed them
headless, are built into a book; Chromium opens it from the folder with every network
request refused and recorded. Each chapter page must show its plots (images that
decoded), its panel's recorded presses (not an empty box; chapter 08 has no panel), the
claim's verdict, and no stderr box; the sidebar and the search must work. Screenshots
of every page land in ``test-artifacts/book-screenshots/`` (the book itself in
``test-artifacts/book/``).

No chapter is executed here: in ``make test`` this test is ``solo``, runs after chapter 08
(the ``alone`` run that starts the solo part) and last in its lane
(``tests/browser/conftest.py``), so the chapter tests have left each
chapter -- notebook, results file and panel record, newer than the notebook and the
library -- in ``test-artifacts/labs/``. A chapter missing or stale there fails the test,
naming the chapter test to run (``DELIVERYLAB_BOOK_FROM=results/course`` takes the
chapters of a ``make course`` run instead). Building and browsing take about 30 s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests import lanes

from deliverylab.classroom.course import book
from deliverylab.classroom.course import run as course

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"
LIB = ROOT / "lib" / "deliverylab"
CHAPTERS = course.discover(LABS)
#: What every chapter leaves in the executed folder (course.run_chapter writes them).
LEFT = (".ipynb", ".json", ".panels.jsonl")
#: Chapters without a failure-button panel (08 measures; it breaks nothing; 02b's faults
#: are its consumers' own stalls, run by its cells).
NO_PANEL = {"02b_consumer_groups", "08_cost_of_guarantees"}

# solo: the chapter tests run in the parallel part (08 alone at the start of the solo part),
# and this one reads what they left. Light (Chromium reading files), so it may share the
# machine: last in the Docker lane (tests/lanes.py).
pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.spark,
              pytest.mark.solo, lanes.DOCKER, pytest.mark.timeout(600)]


def stale(folder: Path, chapter: str) -> str | None:
    """Why ``folder`` does not hold a run of the current notebook and library of this
    chapter (notebook, results file, panel record, all newer than every source), or
    None when it does."""
    files = [folder / f"{chapter}{suffix}" for suffix in LEFT]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        return "missing " + ", ".join(missing)
    sources = [LABS / f"{chapter}.ipynb", *LIB.rglob("*.py")]
    newest = max(sources, key=lambda p: p.stat().st_mtime)
    if min(f.stat().st_mtime for f in files) <= newest.stat().st_mtime:
        return f"older than {newest.relative_to(ROOT)}"
    return None


@pytest.fixture(scope="module")
def executed(artifacts: str) -> Path:
    """The folder of the eleven executed chapters: the chapter tests' (or ``make course``'s
    with ``DELIVERYLAB_BOOK_FROM``)."""
    given = os.environ.get("DELIVERYLAB_BOOK_FROM")
    folder = Path(given) if given else Path(artifacts) / "labs"
    problems = {c: why for c in CHAPTERS if (why := stale(folder, c)) is not None}
    if given:  # a course run: present is enough, its age is its owner's business
        problems = {c: why for c, why in problems.items() if why.startswith("missing")}
    assert not problems, (
        f"the book needs every chapter executed in {folder}: {problems}; run "
        "`pytest tests/labs/test_chapters.py -k 'test_chapter_demonstrates_its_claim and ("
        + " or ".join(problems) + ")'` first (make test does, before "
        "this test)")
    return folder


@pytest.fixture(scope="module")
def built(executed: Path, artifacts: str) -> Path:
    out = Path(artifacts).resolve() / "book"
    report = book.build(executed, out, list(CHAPTERS))
    print(report.summary())
    return out


def _offline(page, requests: list[str]) -> None:
    """The page may read files only: the network is off, and any request that is not
    for a file is refused and noted."""
    page.context.set_offline(True)

    def guard(route):
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            requests.append(url)
            route.abort()

    page.context.route("**/*", guard)


def _check_chapter(page, chapter: str, where: str) -> None:
    """One chapter page: plots decoded, the panel's presses (or no panel), no stderr,
    the verdict, a sidebar whose section links lead somewhere."""
    # Plots: images that the browser decoded (a broken image has no width).
    widths = page.locator(".jp-OutputArea-output img").evaluate_all(
        "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert widths and all(w > 100 for w in widths), f"plots of {where}: {widths}"
    panels = page.locator(".dl-book-panel")
    if chapter in NO_PANEL:
        assert panels.count() == 0, f"{where}: a panel in a chapter that has none"
    else:
        # Each a stand-in with the run's presses, none empty.
        assert panels.count() >= 1, f"no failure-button panel in {where}"
        presses = page.locator(".dl-book-press")
        assert presses.count() >= 1, f"no recorded press in {where}"
        for i in range(presses.count()):
            press = presses.nth(i)
            assert press.locator(".dl-book-press-line").inner_text().strip(), where
            assert press.locator(".dl-book-status").inner_text().strip(), where
    assert page.locator(".jupyter-widgets, .widget-area").count() == 0, where
    # No red stderr box anywhere in the lesson.
    stderr = page.locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, (f"stderr in {where}: "
                                 + " | ".join(stderr.all_inner_texts())[:800])
    assert page.locator(".dl-book-held").count() == 1, where
    # Optional parts (cells tagged "optional") are folded behind one button each, which
    # opens them.
    optional = sum("optional" in c["metadata"].get("tags", []) for c in json.loads(
        (LABS / f"{chapter}.ipynb").read_text())["cells"])
    toggles = page.locator(".dl-book-optional-toggle")
    assert toggles.count() == optional, where
    if optional:
        folded = page.locator("main [hidden]").count()
        assert folded >= 1 and toggles.first.get_attribute("aria-expanded") == "false", where
        toggles.first.click()
        assert toggles.first.get_attribute("aria-expanded") == "true", where
        assert page.locator("main [hidden]").count() < folded, where
    # The sidebar lists this chapter's sections, and they lead somewhere.
    sections = page.locator(".dl-book-sections a")
    assert sections.count() >= 3, where
    # Each section link names exactly one element (ids hold quotes: CSS.escape).
    broken = sections.evaluate_all(
        "as => as.map(a => a.getAttribute('href').slice(1)).filter(id => "
        "document.querySelectorAll('[id=\"' + CSS.escape(id) + '\"]').length !== 1)")
    assert broken == [], (broken, where)


def test_every_chapter_reads_offline_with_plots_presses_and_no_stderr(
        built: Path, page, artifacts: str):
    shots = Path(artifacts).resolve() / "book-screenshots"
    shots.mkdir(exist_ok=True)
    requests: list[str] = []
    _offline(page, requests)
    page.goto((built / "index.html").as_uri())
    links = page.locator("a.dl-book-chapter-link")
    assert links.count() == len(CHAPTERS) == 11
    assert page.locator(".dl-book-verdict", has_text="claim held").count() == len(
        CHAPTERS), page.locator("ol.dl-book-contents").inner_text()
    page.screenshot(path=str(shots / "index.png"), full_page=True)
    for chapter in CHAPTERS:
        page.goto((built / f"{chapter}.html").as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=str(shots / f"{chapter}.png"), full_page=True)
        _check_chapter(page, chapter, f"{chapter} (screenshot: {shots / f'{chapter}.png'})")
    # Search, from a chapter page: typed words find a section of another chapter.
    page.fill(".dl-book-search", "lost ack")
    hits = page.locator(".dl-book-hit a")
    assert hits.count() >= 1
    target = [h for h in hits.evaluate_all("as => as.map(a => a.href)")
              if "02_at_least_once.html#" in h]
    assert target, hits.all_inner_texts()
    page.goto(target[0])
    assert page.url.startswith((built / "02_at_least_once.html").as_uri())
    assert requests == [], f"the book asked the network for: {requests[:10]}"


def test_the_instructors_guide_reads_offline_beside_the_chapters(built: Path, page,
                                                                  artifacts: str):
    """The guides of docs/ are pages of the same book: listed on the contents page, and
    the instructors' guide opens offline with its sidebar sections and its links to the
    measurements leading to a heading that is there."""
    shots = Path(artifacts).resolve() / "book-screenshots"
    shots.mkdir(exist_ok=True)
    requests: list[str] = []
    _offline(page, requests)
    page.goto((built / "index.html").as_uri())
    guides = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
    assert page.locator("a.dl-book-guide-link").count() == len(guides)
    page.click("a.dl-book-guide-link >> nth=0")
    page.wait_for_load_state("load")
    assert page.url.endswith("guide-instructors.html")
    assert page.locator("main h1").inner_text().strip() == "The instructors' guide"
    page.screenshot(path=str(shots / "guide-instructors.png"), full_page=True)
    sections = page.locator(".dl-book-sections a")
    assert sections.count() >= 5
    broken = sections.evaluate_all(
        "as => as.map(a => a.getAttribute('href').slice(1)).filter(id => "
        "document.querySelectorAll('[id=\"' + CSS.escape(id) + '\"]').length !== 1)")
    assert broken == []
    # The sidebar reaches the chapters from the guide, and the guides from a chapter.
    assert page.locator(".dl-book-nav a[href='00_tour.html']").count() == 1
    # A link into the measurements lands on a heading of that page.
    link = page.locator("main a[href^='guide-measurements.html#']").first
    target = link.get_attribute("href")
    link.click()
    page.wait_for_load_state("load")
    anchor = target.split("#", 1)[1]
    assert page.locator(f"[id='{anchor}']").count() == 1, target
    # Search finds a guide's section.
    page.fill(".dl-book-search", "offline bundle")
    hits = page.locator(".dl-book-hit a").evaluate_all("as => as.map(a => a.href)")
    assert any("guide-instructors.html#the-offline-bundle" in h for h in hits), hits
    assert requests == [], f"the guides asked the network for: {requests[:10]}"
