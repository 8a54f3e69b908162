"""Trial (issue 39): the course book built by Sphinx + MyST-NB + sphinx-book-theme.

Jupyter Book 1's stack, tried against :mod:`deliverylab.classroom.course.book` on the same
executed chapters, to decide which builder the lab keeps (docs/measurements.md, "The
book's builder"). Not wired into ``make`` or the tests; it needs a Sphinx of its own::

    python3.11 -m venv /work/sphinx-venv
    /work/sphinx-venv/bin/pip install sphinx myst-nb sphinx-book-theme
    .venv/bin/python bench/book_sphinx.py build --from test-artifacts/labs \\
        --out /tmp/sphinx-book --sphinx-build /work/sphinx-venv/bin/sphinx-build
    .venv/bin/python bench/book_sphinx.py look /tmp/sphinx-book/04_transactions.html \\
        --search "lost ack" --shots /tmp/shots --name sphinx

``build`` writes a Sphinx source folder (a generated ``conf.py``, the chapters, the
guides of ``docs/``) and runs ``sphinx-build`` on it. No chapter is executed again
(``nb_execution_mode = "off"``); what the book leaves out and what stands in for a
widget are the book's own: each notebook goes through :func:`book.prepare`, which
drops solutions and tagged cells and writes every recorded failure-button panel into
the notebook as a ``text/html`` output, so MyST-NB (or any renderer) shows it. The
run's banner and verdict are :func:`book._banner` / :func:`book._verdict`, as raw HTML
cells. ``look`` opens a page in Debian's Chromium with every request that is not
for a file refused and noted, searches, and takes screenshots at 1280 and 420 px.

This script imports only the lab's library at module level: Sphinx lives in its own
venv and is run as a program, Playwright is imported inside ``look``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deliverylab.classroom.course import book
from deliverylab.classroom.course import guides as guide_pages

ROOT = Path(__file__).resolve().parents[1]

CONF = '''\
project = "Delivery Guarantees Lab"
extensions = ["myst_nb"]
html_theme = "sphinx_book_theme"
html_title = "Delivery Guarantees Lab"
nb_execution_mode = "off"  # the chapters ran headless already
myst_heading_anchors = 6  # GitHub's anchors: the guides link to them
html_copy_source = False  # no second copy of every notebook in _sources/
html_static_path = ["_static"]
html_css_files = ["book.css"]  # the stand-ins' look (.dl-book-panel, ...)
exclude_patterns = ["_build"]
'''


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def write_source(source: Path, src: Path, labs: Path, docs: Path,
                 wanted: list[str] | None = None) -> int:
    """The Sphinx source folder for the chapters in ``source`` (``wanted``: by name or
    prefix) and the guides in ``docs``; returns the number of chapters."""
    chapters = book.find_chapters(source, wanted)
    guides = guide_pages.find_guides(docs)
    src.mkdir(parents=True)
    for ch in chapters:
        executed = json.loads(ch.notebook.read_text(encoding="utf-8"))
        nb = book.prepare(executed, ch.panels, labs)
        title = 1 if nb["cells"] and nb["cells"][0]["cell_type"] == "markdown" else 0
        nb["cells"].insert(title, _markdown(book._banner(ch, book.run_parameters(executed))))
        nb["cells"].append(_markdown(book._verdict(ch)))
        for cell in nb["cells"]:  # a plot's alt text: MyST-NB reads it from the cell
            alts = [o["metadata"][book.ALT] for o in cell.get("outputs", [])
                    if book.ALT in o.get("metadata", {})]
            if alts:
                cell["metadata"]["mystnb"] = {"image": {"alt": alts[0]}}
        (src / f"{ch.name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    for guide in guides:
        shutil.copyfile(guide.source, src / f"{guide.name}.md")
    if (docs / guide_pages.IMAGES).is_dir():
        shutil.copytree(docs / guide_pages.IMAGES, src / guide_pages.IMAGES)
    rows = "\n".join(f"- [{ch.title}]({ch.name}.ipynb) ({ch.verdict}): {ch.idea}"
                     for ch in chapters)
    more = "\n".join(f"- [{g.title}]({g.name}.md): {g.summary()}" for g in guides)
    toc = "\n".join(ch.name for ch in chapters)
    gtoc = "\n".join(g.name for g in guides)
    (src / "index.md").write_text(
        "# Delivery Guarantees Lab\n\nEach chapter as it ran on a real Kafka cluster, "
        "headless, with its failure buttons pressed by the course's schedule.\n\n"
        f"{rows}\n\n## Guides\n\n{more}\n\n"
        f"```{{toctree}}\n:hidden:\n:caption: Chapters\n\n{toc}\n```\n\n"
        f"```{{toctree}}\n:hidden:\n:caption: Guides\n\n{gtoc}\n```\n", encoding="utf-8")
    (src / "_static").mkdir()
    shutil.copyfile(book.RESOURCES / "book.css", src / "_static" / "book.css")
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    return len(chapters)


#: A URL in a page, script or style sheet (what could make an opened page go online).
_URL = re.compile(r"""https?://[^\s"'<>()\\]+""")


def urls(folder: Path) -> dict:
    """What of the built site names the network: ``loads``, each reference a browser
    would fetch (book.py's own test: ``src=``, ``href=`` but a link's, ``url(``,
    ``@import``), in every HTML, JS and CSS file; ``mentions``, every other
    ``http(s)://`` prefix with its count, to judge by hand (a licence comment, an SVG
    namespace and a link a reader may follow are not requests)."""
    loads: list[str] = []
    mentions: dict[str, int] = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.suffix not in (".html", ".js", ".css", ".mjs") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in book._EXTERNAL.finditer(text):
            tag = text[text.rfind("<", 0, m.start()):m.end() + 60]
            if not tag.lower().startswith("<a "):
                loads.append(f"{path.relative_to(folder)}: {text[m.start():m.end() + 60]}")
        for m in _URL.finditer(text):
            key = f"{path.suffix} {'/'.join(m.group(0).split('/')[:3])}"
            mentions[key] = mentions.get(key, 0) + 1
    return {"loads": loads, "mentions": dict(sorted(mentions.items(), key=lambda kv: -kv[1]))}


def _size(folder: Path) -> tuple[int, int]:
    files = [p for p in Path(folder).rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def build(source: Path, out: Path, sphinx_build: str, labs: Path, docs: Path,
          keep: Path | None = None, wanted: list[str] | None = None) -> dict:
    """Write the source, run sphinx-build into ``out`` (replaced); what it took."""
    with tempfile.TemporaryDirectory(prefix="book-sphinx-") as tmp:
        src = Path(keep) if keep else Path(tmp) / "src"
        if src.exists():
            shutil.rmtree(src)
        started = time.monotonic()
        n = write_source(Path(source), src, Path(labs), Path(docs), wanted)
        prepared = time.monotonic() - started
        if Path(out).exists():
            shutil.rmtree(out)
        proc = subprocess.run([sphinx_build, "-b", "html", "-q", "-d", str(Path(tmp) / "dt"),
                               str(src), str(out)], capture_output=True, text=True)
        took = time.monotonic() - started
    warnings = [ln for ln in proc.stderr.splitlines() if "WARNING" in ln]
    if proc.returncode != 0:
        raise RuntimeError(f"sphinx-build exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    files, size = _size(Path(out))
    return {"chapters": n, "seconds": round(took, 1), "prepare_seconds": round(prepared, 1),
            "files": files, "bytes": size, "warnings": len(warnings),
            "first_warnings": warnings[:15], "urls": urls(Path(out))}


def look(page_file: Path, shots: Path, name: str, search: str | None,
         every: bool = False, chromium: str = "/usr/bin/chromium") -> dict:
    """Open a built page from its file offline (every non-file request refused and
    noted), screenshot it at 1280 and 420 px, and, when asked, search the book from
    the page the way a reader would (Sphinx's search page, or the current book's box)
    and open every page beside it (``every``), noting any request not for a file."""
    from playwright.sync_api import sync_playwright

    shots.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    result: dict = {"requests": requests}

    def guard(route):  # noqa: ANN001 - Playwright's Route
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            requests.append(route.request.url)
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        try:
            for width in (1280, 420):
                context = browser.new_context(viewport={"width": width, "height": 900},
                                              offline=True)
                context.route("**/*", guard)
                page = context.new_page()
                page.goto(Path(page_file).resolve().as_uri())
                page.wait_for_load_state("load")
                page.wait_for_timeout(500)
                shot = shots / f"{name}-{width}.png"
                page.screenshot(path=str(shot))
                page.screenshot(path=str(shots / f"{name}-{width}-full.png"), full_page=True)
                panel = page.locator(".dl-book-panel")
                if panel.count():  # the recorded panel, as each book shows it
                    panel.first.scroll_into_view_if_needed()
                    panel.first.screenshot(path=str(shots / f"{name}-{width}-panel.png"))
                    page.screenshot(path=str(shots / f"{name}-{width}-at-panel.png"))
                result[f"height_{width}"] = page.evaluate("document.body.scrollHeight")
                result[f"overflow_{width}"] = page.evaluate(
                    "document.documentElement.scrollWidth > window.innerWidth")
                if search and width == 1280:
                    result["search"] = _search(page, Path(page_file), search, shots, name)
                if every and width == 1280:  # every page of the book, offline
                    for other in sorted(Path(page_file).parent.glob("*.html")):
                        page.goto(other.resolve().as_uri())
                        page.wait_for_load_state("load")
                    result["pages_opened"] = len(list(Path(page_file).parent.glob("*.html")))
                context.close()
        finally:
            browser.close()
    return result


def _search(page, page_file: Path, words: str, shots: Path, name: str) -> list[str]:  # noqa: ANN001
    """The hits a reader gets for ``words`` (their link targets)."""
    if page.locator(".dl-book-search").count():  # the current book: its sidebar box
        page.fill(".dl-book-search", words)
        hits = page.locator(".dl-book-hit a")
    else:  # Sphinx: search.html?q=..., which loads searchindex.js by a script tag
        page.goto((page_file.parent / "search.html").resolve().as_uri() + "?q="
                  + words.replace(" ", "+"))
        page.wait_for_selector("#search-results p.search-summary, .search-summary",
                               timeout=15000)
        page.wait_for_timeout(1000)
        hits = page.locator("#search-results ul.search li a")
    page.screenshot(path=str(shots / f"{name}-search.png"))
    return hits.evaluate_all("as => as.map(a => a.getAttribute('href'))")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build", help="build the Sphinx book of executed chapters")
    b.add_argument("chapters", nargs="*", help="by name or prefix (default: all)")
    b.add_argument("--from", dest="source", type=Path, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--sphinx-build", default="/work/sphinx-venv/bin/sphinx-build")
    b.add_argument("--labs", type=Path, default=ROOT / "labs")
    b.add_argument("--docs", type=Path, default=ROOT / "docs")
    b.add_argument("--keep-source", type=Path, default=None,
                   help="write the Sphinx source folder here (replaced) to look at it")
    lk = sub.add_parser("look", help="open a built page offline; screenshots, search")
    lk.add_argument("page", type=Path)
    lk.add_argument("--shots", type=Path, required=True)
    lk.add_argument("--name", required=True)
    lk.add_argument("--search", default=None)
    lk.add_argument("--every", action="store_true", help="open every page, offline")
    args = parser.parse_args(argv)
    if args.what == "build":
        report = build(args.source, args.out, args.sphinx_build, args.labs, args.docs,
                       args.keep_source, args.chapters)
    else:
        report = look(args.page, args.shots, args.name, args.search, args.every)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
