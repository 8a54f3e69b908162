"""The course book in Chromium with the network off, as a student reads it before class.

Three chapters executed headless (00, 02, 04: each presses failure buttons) are built
into a book; Chromium opens it from the folder with every network request refused and
recorded. Each chapter page must show its plots (images that decoded), its panels'
recorded presses (not an empty box), the claim's verdict, and no stderr box; the
sidebar and the search must work. Screenshots of the three pages land in
``test-artifacts/book-screenshots/`` (the book itself in ``test-artifacts/book/``).

Cost: the executed chapters are reused from ``test-artifacts/labs/`` when the chapter
tests left them there from the current notebooks and library (newer than both), as in
a full ``make test``; otherwise this test executes them itself (about 3-5 minutes on 2
cores). ``DELIVERYLAB_BOOK_FROM=results/course`` takes them from a ``make course`` run
instead. Building and browsing take about 20 seconds.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from deliverylab.classroom import book, course

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"
LIB = ROOT / "lib" / "deliverylab"
CHAPTERS = ("00_tour", "02_at_least_once", "04_transactions")

pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.spark,
              pytest.mark.timeout(1800)]


def _fresh(folder: Path, chapter: str) -> bool:
    """Did a run of the current notebook and library leave this chapter in ``folder``
    (notebook, results file and panel record, all newer than every source)?"""
    files = [folder / f"{chapter}{suffix}" for suffix in (".ipynb", ".json", ".panels.jsonl")]
    if not all(f.is_file() for f in files):
        return False
    sources = [LABS / f"{chapter}.ipynb", *LIB.rglob("*.py")]
    newest_source = max(p.stat().st_mtime for p in sources)
    return min(f.stat().st_mtime for f in files) > newest_source


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory, artifacts: str) -> Path:
    """A folder holding the three chapters executed headless (reused or run now)."""
    given = os.environ.get("DELIVERYLAB_BOOK_FROM")
    if given:
        return Path(given)
    reuse = Path(artifacts) / "labs"
    folder = tmp_path_factory.mktemp("executed")
    os.environ.setdefault("DELIVERYLAB_PROGRESS", "text")
    for chapter in CHAPTERS:
        if _fresh(reuse, chapter):
            for suffix in (".ipynb", ".json", ".panels.jsonl"):
                shutil.copy2(reuse / f"{chapter}{suffix}", folder)
            continue
        run = course.run_chapter(chapter, folder, LABS, small=True, html=False,
                                 extra={"backend": "local"})
        assert run.error is None, f"{chapter} did not run: {run.error} ({run.notebook})"
    return folder


@pytest.fixture(scope="module")
def built(executed: Path, artifacts: str) -> Path:
    out = Path(artifacts).resolve() / "book"
    if out.exists():
        shutil.rmtree(out)
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


def test_three_chapters_read_offline_with_plots_presses_and_no_stderr(
        built: Path, page, artifacts: str):
    shots = Path(artifacts).resolve() / "book-screenshots"
    shots.mkdir(exist_ok=True)
    requests: list[str] = []
    _offline(page, requests)
    page.goto((built / "index.html").as_uri())
    links = page.locator("a.dl-book-chapter-link")
    assert links.count() == len(CHAPTERS)
    assert page.locator(".dl-book-verdict", has_text="claim held").count() == len(
        CHAPTERS), page.locator(".dl-book-contents").inner_text()
    for chapter in CHAPTERS:
        page.goto((built / f"{chapter}.html").as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=str(shots / f"{chapter}.png"), full_page=True)
        where = f"{chapter} (screenshot: {shots / f'{chapter}.png'})"
        # Plots: images that the browser decoded (a broken image has no width).
        widths = page.locator(".jp-OutputArea-output img").evaluate_all(
            "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
        assert widths and all(w > 100 for w in widths), f"plots of {where}: {widths}"
        # Panels: each a stand-in with the run's presses, none empty.
        panels = page.locator(".dl-book-panel")
        assert panels.count() >= 1, f"no failure-button panel in {where}"
        presses = page.locator(".dl-book-press")
        assert presses.count() >= 1, f"no recorded press in {where}"
        first = presses.first
        assert first.locator(".dl-book-press-line").inner_text().strip()
        assert first.locator(".dl-book-status").inner_text().strip(), where
        assert page.locator(".jupyter-widgets, .widget-area").count() == 0
        # No red stderr box anywhere in the lesson.
        stderr = page.locator("[data-mime-type='application/vnd.jupyter.stderr']")
        assert stderr.count() == 0, (f"stderr in {where}: "
                                     + " | ".join(stderr.all_inner_texts())[:800])
        assert page.locator(".dl-book-held").count() == 1, where
        # The sidebar lists this chapter's sections, and they lead somewhere.
        sections = page.locator(".dl-book-sections a")
        assert sections.count() >= 3, where
        anchor = sections.first.get_attribute("href")
        assert page.locator(f"[id='{anchor[1:]}']").count() == 1, (anchor, where)
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
