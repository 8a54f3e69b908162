"""The course as a book: the executed chapters as one static site that opens offline.

``python -m deliverylab.classroom.course.book --from results/course --out results/book``
(``make book``) turns the notebooks a headless run executed (``make course``, or the chapter tests'
``test-artifacts/labs``) into a folder of HTML pages: a contents page with each
chapter's idea, link and verdict, one page per chapter with its outputs and plots and,
at its end, the chapter's claim and verdict, a sidebar to move between chapters and
sections, and a search over every section. No
chapter is executed again. Beside the chapters, the guides of ``docs/`` (the
instructors' guide, troubleshooting, measurements: :mod:`.guides`) are pages of
the same book, in its sidebar, contents and search.

Why a static site built with nbconvert rather than Jupyter Book 2 / MyST: the lab
already renders chapters with nbconvert (:mod:`.run`), the site must open from a
folder with no network (MyST's HTML build runs a theme it downloads the first time,
jupyter-book/mystmd#131; nbconvert's default template loads require.js, MathJax and
the widget manager from a CDN, which this one leaves out), and the hard part -- the
failure buttons -- cannot be rendered from widget state anyway: a headless run's
panel is closed at the chapter's end, so its state is gone, and a live widget in a
static page does nothing. Instead each panel is replaced by a static stand-in built
from what the panel recorded after every press
(:func:`deliverylab.notebook.record.record_panel`): the press line, the status line,
the History's last operations. What the book leaves out: cells tagged ``solution`` or
``remove-cell`` (exercise solutions), inputs tagged ``remove-input``, outputs tagged
``remove-output``, a self-check's output, a prediction's and its reveal's (a headless
run's ``predict_`` parameter stood for the student; the banner leaves it out too), and
a graded exercise's (a headless run grades the reference solution): the book shows the
exercise's starter file instead. Nor does anything before a chapter's end state its
outcome: the claim (which states it) and the run's counts and checks stand after the
chapter's last cell, not on the contents page or at the top of the chapter's page.
"""

from __future__ import annotations

import argparse
import copy
import html
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import bad_value, command_failed
from ...notebook import figures
from ...notebook.chapter import CHAPTER_CLAIMS, chapter_names
from .guides import Guide, copy_images, find_guides, guide_page
from .run import default_labs, select
from .search import Section, outline, search_index, unique_heading_ids

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: Cell tags the book honours (Jupyter Book's names, plus the chapters' ``solution``).
REMOVE_CELL = frozenset({"solution", "remove-cell"})
REMOVE_INPUT = "remove-input"
REMOVE_OUTPUT = "remove-output"
#: Papermill's cell of the parameters it passed: shown in the banner instead (it holds
#: the run's own paths).
INJECTED = "injected-parameters"
#: Parameters of a headless run that say nothing to a reader (machine paths; the chapter
#: tests' reference solution, whose grade the book leaves out anyway; ``predict_*``).
_RUN_ONLY = ("results_path", "solution")
#: A code cell calling one of these shows an answer (a self-check; a prediction the
#: run's parameter made, or its reveal beside the outcome): its output stays out.
ANSWER_CALLS = ("self_check(", "dl.predict(", "dl.reveal(")
#: A code cell calling this grades an exercise file: a headless run grades the
#: reference solution, so its output is replaced by the student's starter.
GRADE_CALL = "dl.grade("
_STARTER = re.compile(r"exercises/([\w.-]+\.py)")
#: Assets copied next to the pages (package resources).
ASSETS = ("book.css", "book.js")
TEMPLATE = "book-chapter.html.j2"
RESOURCES = Path(__file__).resolve().parents[2] / "resources"

#: An external reference in a page: what makes a page need the network.
_EXTERNAL = re.compile(r"""(?:(?:src|href)\s*=\s*["']?|url\(\s*["']?|@import\s+["'])"""
                       r"""(?:https?:)?//""", re.I)


# --- the chapters of a course folder -------------------------------------------------------


@dataclass
class PanelRecord:
    """One failure-button panel of a headless run, as it recorded itself."""

    model_id: str
    title: str = "Failure buttons"
    buttons: list[str] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)
    shown_status_html: str = ""
    presses: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Chapter:
    """One executed chapter: its notebook, results file and panel record."""

    name: str
    notebook: Path
    results: dict[str, Any] | None
    panels: dict[str, PanelRecord]
    title: str = ""

    @property
    def page(self) -> str:
        return f"{self.name}.html"

    @property
    def idea(self) -> str:
        """What the chapter asks, in words that give no outcome away (the contents page)."""
        entry = CHAPTER_CLAIMS.get(self.name)
        return entry.idea if entry else ""

    @property
    def verdict(self) -> str:
        if not self.results:
            return "no results file"
        return "claim held" if self.results.get("pass") is True else "claim NOT held"


def load_panels(path: Path) -> dict[str, PanelRecord]:
    """The panels a run recorded (``<chapter>.panels.jsonl``), by widget model id."""
    panels: dict[str, PanelRecord] = {}
    if not path.is_file():
        return panels
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            mid = entry["model_id"]
        except (ValueError, KeyError, TypeError):
            raise bad_value(f"{path.name} line {n}", line[:80],
                            "a JSON object with a model_id (written by FaultPanel)") from None
        panel = panels.setdefault(mid, PanelRecord(mid))
        panel.title = entry.get("title") or panel.title
        panel.buttons = list(entry.get("buttons") or panel.buttons)
        panel.absent = dict(entry.get("absent") or panel.absent)
        if entry.get("event") == "shown":
            panel.shown_status_html = entry.get("status_html", "")
        elif entry.get("event") == "press":
            panel.presses.append(entry)
    return panels


def _title(nb: dict[str, Any], fallback: str) -> str:
    """The chapter's first Markdown heading."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in _source(cell).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def find_chapters(source: Path, wanted: list[str] | None = None) -> list[Chapter]:
    """The executed chapters in ``source``, in course order (``wanted``: by name or
    prefix, as ``make course`` takes them)."""
    source = Path(source)
    if not source.is_dir():
        raise bad_value("source", str(source), "a folder of executed chapters (make course "
                        "writes results/course)")
    names = chapter_names(source)
    if not names:
        raise bad_value("source", str(source), "a folder holding executed chapter notebooks "
                        "(NN_topic.ipynb): run `make course` first")
    chapters = []
    for name in select(names, wanted or []):
        notebook = source / f"{name}.ipynb"
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        results_file = source / f"{name}.json"
        results = json.loads(results_file.read_text()) if results_file.is_file() else None
        chapters.append(Chapter(name, notebook, results,
                                load_panels(source / f"{name}.panels.jsonl"),
                                _title(nb, name)))
    return chapters


# --- what a page shows instead of a widget -------------------------------------------------


def panel_html(panel: PanelRecord) -> str:
    """A static stand-in of a failure-button panel: its buttons (inert), then each press
    the headless run made, with the status line and History excerpt that followed."""
    esc = html.escape
    buttons = "".join(
        f"<span class='dl-book-button' title='{esc(panel.absent.get(b, ''))}'>{esc(b)}</span>"
        for b in panel.buttons)
    parts = [f"<div class='dl-book-panel' data-model-id='{esc(panel.model_id)}'>",
             f"<div class='dl-book-panel-title'><b>{esc(panel.title)}</b> "
             "<span class='dl-book-note'>(recorded in the headless run: in the notebook "
             "these are live buttons)</span></div>",
             f"<div class='dl-book-buttons'>{buttons}</div>"]
    if not panel.presses:
        parts.append("<p class='dl-book-nopress'>No button was pressed in this run. "
                     "The status line as the panel appeared:</p>")
        parts.append(f"<div class='dl-book-status'>{panel.shown_status_html}</div>")
    else:
        parts.append("<ol class='dl-book-presses'>")
        for press in panel.presses:
            failed = "" if press.get("ok", True) else " dl-book-failed"
            history = "\n".join(press.get("history") or []) or "(no operation recorded yet)"
            parts.append(
                f"<li class='dl-book-press{failed}'>"
                f"<div class='dl-book-press-line'>{esc(press.get('line', ''))}</div>"
                "<div class='dl-book-after'>status after the press:</div>"
                f"<div class='dl-book-status'>{press.get('status_html', '')}</div>"
                "<details open><summary>History, last operations</summary>"
                f"<pre class='dl-book-history'>{esc(history)}</pre></details></li>")
        parts.append("</ol>")
    parts.append("</div>")
    return "".join(parts)


def _stand_in(output: dict[str, Any], panels: dict[str, PanelRecord]) -> dict[str, Any] | None:
    """A widget output made static: the recorded panel, else its text form; None (no
    output at all, rather than an empty box) when neither exists."""
    data = output.get("data", {})
    view = data.get(WIDGET_VIEW)
    if view is None:
        return output
    panel = panels.get(view.get("model_id", "")) if isinstance(view, dict) else None
    if panel is not None:
        body = panel_html(panel)
    else:
        text = data.get("text/plain")
        text = "".join(text) if isinstance(text, list) else text
        if not text or not text.strip():
            return None
        body = f"<pre class='dl-book-widget-text'>{html.escape(text)}</pre>"
    out = {k: v for k, v in output.items() if k != "data"}
    out["data"] = {"text/html": body}
    return out


#: A plot's title as the cell that drew it names it: ``title="..."`` (or ``f"..."``).
#: A chapter's call of an explanatory figure (``dl.figures.<name>()``).
_FIGURE_CALL = re.compile(r"\bdl\.figures\.(\w+)\(")
_TITLE_ARG = re.compile(r"""\btitle\s*=\s*f?(["'])(.+?)\1""")
#: Output metadata key the chapter template reads for an image's alternative text.
ALT = "dl_book_alt"


def alt_text(source: str) -> str:
    """An image's alternative text: the title its cell gives the plot, else the call that
    drew it (a reader without the image, or a screen reader, still learns what it is)."""
    figure = _FIGURE_CALL.search(source)
    if figure and (said := figures.describe(figure.group(1))):
        return "Figure: " + said
    found = _TITLE_ARG.search(source)
    if found:  # an f-string's fields are the run's values: not known here
        return "Plot: " + re.sub(r"\{[^}]*\}", "...", found.group(2))
    lines = [ln.strip() for ln in source.splitlines() if ln.strip()
             and not ln.strip().startswith("#")]
    return "Plot drawn by: " + (lines[-1][:120] if lines else "this cell")


#: A printed table's rule under its header: "-----  ------  ----".
_TABLE_RULE = re.compile(r"^ *-{3,}( +-{3,})+ *$", re.M)


def _unwrapped(output: dict[str, Any]) -> dict[str, Any]:
    """A printed table kept on its lines: scrolled sideways, never wrapped.

    Why: JupyterLab's style wraps long output lines, which is right for sentences but
    shreds a table wider than the page (chapter 08's cost table: every row on two lines).
    Output without a table keeps the usual wrapping."""
    if output.get("output_type") != "stream" or output.get("name") != "stdout":
        return output
    text = output.get("text", "")
    text = "".join(text) if isinstance(text, list) else text
    if not _TABLE_RULE.search(text):
        return output
    return _note(f"<pre class='dl-book-table-text'>{html.escape(text)}</pre>")


def _note(html_text: str) -> dict[str, Any]:
    return {"output_type": "display_data", "metadata": {}, "data": {"text/html": html_text}}


def starter_note(source: str, labs: Path | None) -> dict[str, Any]:
    """What the book shows for a graded exercise: the starter file the cell grades."""
    found = _STARTER.search(source)
    path = Path(labs) / "exercises" / found.group(1) if labs and found else None
    intro = ("<p class='dl-book-note'>Graded in the notebook: this cell runs your "
             + (f"<code>exercises/{html.escape(found.group(1))}</code>" if found else
                "exercise file") + " under the chapter's faults. The book shows the "
             "starter, not the reference solution's grade.</p>")
    if path is None or not path.is_file():
        return _note(intro)
    return _note(intro + "<pre class='dl-book-starter'>"
                 + html.escape(path.read_text(encoding="utf-8")) + "</pre>")


def prepare(nb: dict[str, Any], panels: dict[str, PanelRecord],
            labs: Path | None = None) -> dict[str, Any]:
    """A copy of an executed notebook fit for the book: solutions out, widgets static,
    no widget state (which would pull the widget manager from a CDN)."""
    nb = copy.deepcopy(nb)
    nb.get("metadata", {}).pop("widgets", None)
    cells = []
    for cell in nb.get("cells", []):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & REMOVE_CELL or INJECTED in tags:
            continue
        if cell.get("cell_type") == "code":
            if REMOVE_OUTPUT in tags:
                cell["outputs"] = []
            elif any(call in _source(cell) for call in ANSWER_CALLS):
                cell["outputs"] = [_note(
                    "<p class='dl-book-note'>This output is left out of the book: it would "
                    "give the answer away. Run the chapter, and commit your prediction "
                    "before its run.</p>")]
            elif GRADE_CALL in _source(cell):
                cell["outputs"] = [starter_note(_source(cell), labs)]
            else:
                cell["outputs"] = [_unwrapped(o) for o in (_stand_in(o, panels)
                                                           for o in cell.get("outputs", []))
                                   if o]
                for o in cell["outputs"]:
                    if "image/png" in o.get("data", {}):
                        o.setdefault("metadata", {})[ALT] = alt_text(_source(cell))
        cells.append(cell)
    nb["cells"] = cells
    return nb


# --- pages ------------------------------------------------------------------------------


def _exporter():
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    config = Config()
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_input_tags = {REMOVE_INPUT}
    return HTMLExporter(config=config, template_name="lab", template_file=TEMPLATE,
                        extra_template_paths=[str(RESOURCES)])


def _nav(chapters: list[Chapter], current: Chapter | Guide | None,
         sections: list[Section], guides: list[Guide] | None = None) -> str:
    """The sidebar: the book's title, search, every chapter, then every guide
    (``docs/``), the current page's sections under it."""
    esc = html.escape

    def entries(pages: list[Chapter] | list[Guide]) -> str:
        items = []
        for pg in pages:
            here = pg is current
            items.append(f"<li class='{'dl-book-current' if here else ''}'>"
                         f"<a href='{esc(pg.page)}'>{esc(pg.title)}</a>")
            if here:
                subs = "".join(f"<li class='dl-book-h{s.level}'><a href='#{esc(s.anchor)}'>"
                               f"{esc(s.heading)}</a></li>" for s in sections
                               if s.level in (2, 3) and s.anchor)
                items.append(f"<ul class='dl-book-sections'>{subs}</ul>")
            items.append("</li>")
        return "".join(items)

    more = (f"<div class='dl-book-guides-title'>Guides</div><ol class='dl-book-chapters "
            f"dl-book-guides'>{entries(guides)}</ol>") if guides else ""
    return ("<nav class='dl-book-nav'><a class='dl-book-home' href='index.html'>"
            "Delivery Guarantees Lab</a>"
            "<input class='dl-book-search' type='search' placeholder='Search the book' "
            "aria-label='Search the book'><ol class='dl-book-hits'></ol>"
            f"<ol class='dl-book-chapters'>{entries(chapters)}</ol>{more}</nav>")


def run_parameters(nb: dict[str, Any]) -> list[str]:
    """The lines of papermill's injected-parameters cell a reader cares about: the
    fault schedule and sizes of this run (not its file paths)."""
    for cell in nb.get("cells", []):
        if INJECTED in cell.get("metadata", {}).get("tags", []):
            return [line for line in _source(cell).splitlines()
                    if line.strip() and not line.startswith("#")
                    and line.split("=")[0].strip() not in _RUN_ONLY
                    and not line.startswith("predict_")]
    return []


def _banner(ch: Chapter, params: list[str]) -> str:
    """The top of a chapter's page: the parameters the headless run was given, and
    whether the run passed -- never the claim, which states the outcomes the chapter
    asks the reader to predict (it stands at the end, :func:`_verdict`). A run that
    failed says so here too, so that nobody reads a broken run as the lesson."""
    esc = html.escape
    ran = ("<div class='dl-book-params'>This run's parameters: <code>"
           + esc("; ".join(params)) + "</code></div>") if params else ""
    if not ch.results:
        return ("<div class='dl-book-banner dl-book-unknown'>This chapter's run wrote no "
                f"results file: its claim was not checked.{ran}</div>")
    if ch.results.get("pass") is not True:
        return ("<div class='dl-book-banner dl-book-broken'><b>This run did NOT pass its "
                "checks</b>: read it as a broken run, not as the lesson (the failed checks "
                f"are at the end of the page).{ran}</div>")
    return ("<div class='dl-book-banner dl-book-run'>The chapter's claim, and whether it "
            f"held in this run, are at the end of the page.{ran}</div>")


def _verdict(ch: Chapter) -> str:
    """The end of a chapter's page: its claim and checks, as the run's results file
    holds them, after everything that asks the reader to predict them."""
    if not ch.results:
        return ""
    esc = html.escape
    ok = ch.results.get("pass") is True
    checks = "".join(
        f"<li class='{'dl-book-ok' if c.get('pass') else 'dl-book-notok'}'>"
        f"{esc(str(c.get('what', '')))}</li>" for c in ch.results.get("checks", []))
    return (f"<div class='dl-book-banner {'dl-book-held' if ok else 'dl-book-broken'}'>"
            f"<b>{'The claim held in this run' if ok else 'The claim did NOT hold'}:</b> "
            f"{esc(str(ch.results.get('claim', '')))}"
            + (f"<ul class='dl-book-checks'>{checks}</ul>" if checks else "") + "</div>")


def _footer(chapters: list[Chapter], ch: Chapter) -> str:
    """The chapter's verdict, then the links to the chapters before and after it."""
    i = chapters.index(ch)
    prev = (f"<a href='{chapters[i - 1].page}'>&larr; {html.escape(chapters[i - 1].title)}"
            "</a>" if i else "<a href='index.html'>&larr; Contents</a>")
    nxt = (f"<a href='{chapters[i + 1].page}'>{html.escape(chapters[i + 1].title)} &rarr;"
           "</a>" if i + 1 < len(chapters) else "<a href='index.html'>Contents &rarr;</a>")
    return f"{_verdict(ch)}<div class='dl-book-pager'>{prev}{nxt}</div>"


#: Where the sidebar goes in a rendered page: it lists the headings' ids, which only
#: exist once nbconvert has rendered the page.
_NAV_SLOT = "<!--dl-book-nav-->"


def render_chapter(ch: Chapter, chapters: list[Chapter], labs: Path | None = None,
                   guides: list[Guide] | None = None) -> tuple[str, list[Section]]:
    """A chapter's page, and its sections (``labs``: where exercise starters are)."""
    import nbformat

    executed = json.loads(ch.notebook.read_text(encoding="utf-8"))
    # reads(), not from_dict(): it joins the stored line lists back into strings.
    nb = nbformat.reads(json.dumps(prepare(executed, ch.panels, labs)), as_version=4)
    resources = {"book_nav": _NAV_SLOT, "book_banner": _banner(ch, run_parameters(executed)),
                 "book_footer": _footer(chapters, ch), "metadata": {"name": ch.title}}
    body, _ = _exporter().from_notebook_node(nb, resources=resources)
    body = unique_heading_ids(body)
    sections = outline(body)
    return body.replace(_NAV_SLOT, _nav(chapters, ch, sections, guides), 1), sections


def render_guide(guide: Guide, chapters: list[Chapter],
                 guides: list[Guide]) -> tuple[str, list[Section]]:
    """A guide's page (:mod:`.guides`) with the book's sidebar, and its sections."""
    page = guide_page(guide, guides, _NAV_SLOT)
    sections = outline(page)
    return page.replace(_NAV_SLOT, _nav(chapters, guide, sections, guides), 1), sections


def index_page(chapters: list[Chapter], guides: list[Guide] | None = None) -> str:
    """The contents page: each chapter with its link, its idea and whether its run
    passed, then the guides (the instructors' guide first) with their first lines.

    Not a chapter's claim, checks or counts: they state the outcomes the chapter asks
    its reader to predict, so they stand at the end of the chapter's own page."""
    esc = html.escape
    rows = []
    for ch in chapters:
        idea = f"<p class='dl-book-idea'>{esc(ch.idea)}</p>" if ch.idea else ""
        rows.append(
            f"<li class='dl-book-entry'><a class='dl-book-chapter-link' href='{esc(ch.page)}'>"
            f"{esc(ch.title)}</a> <span class='dl-book-verdict'>{esc(ch.verdict)}</span>"
            f"{idea}</li>")
    more = "".join(f"<li class='dl-book-entry'><a class='dl-book-guide-link' "
                   f"href='{esc(g.page)}'>{esc(g.title)}</a>"
                   f"<p class='dl-book-idea'>{esc(g.summary())}</p></li>" for g in guides or [])
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1.0'>"
            "<title>Delivery Guarantees Lab: the course</title>"
            "<link rel='stylesheet' href='book.css'>"
            "<script src='search-index.js' defer></script><script src='book.js' defer>"
            "</script></head><body class='dl-book'>" + _nav(chapters, None, [], guides)
            + "<main class='dl-book-main dl-book-index'><h1>Delivery Guarantees Lab</h1>"
            "<p>Each chapter as it ran on a real Kafka cluster, headless, with its failure "
            "buttons pressed by the course's schedule: read what each press did, the "
            "plots and Spark's evidence, and, at each chapter's end, its claim and whether "
            "it held. The exercises are left for you: run the notebooks to do them.</p>"
            f"<ol class='dl-book-contents'>{''.join(rows)}</ol>"
            + ("<h2>Guides: running the course, measurements, when something fails</h2>"
               f"<ul class='dl-book-contents dl-book-guide-list'>{more}</ul>" if more else "")
            + "</main></body></html>")


def external_references(folder: Path) -> list[str]:
    """``page: reference`` for every script, style sheet, image or link in the book's
    pages that would be fetched from the network (a reader offline would miss it)."""
    found = []
    for page in sorted(Path(folder).glob("*.html")):
        text = page.read_text(encoding="utf-8")
        for m in _EXTERNAL.finditer(text):
            tag_start = text.rfind("<", 0, m.start())
            tag = text[tag_start:text.find(">", m.end()) + 1]
            if tag.lower().startswith("<a "):
                continue  # a link the reader may follow; nothing loads it
            found.append(f"{page.name}: {tag[:160]}")
    return found


# --- the whole book ---------------------------------------------------------------------


@dataclass
class BookReport:
    """What :func:`build` wrote."""

    out: Path
    chapters: list[Chapter]
    presses: dict[str, int]
    stderr_outputs: dict[str, int]
    guides: list[Guide] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"book: {len(self.chapters)} chapters and {len(self.guides)} guide(s) in "
                 f"{self.out}/ (open index.html)"]
        for ch in self.chapters:
            lines.append(f"  {ch.name}: {ch.verdict}; {self.presses[ch.name]} recorded "
                         f"press(es); {self.stderr_outputs[ch.name]} stderr output(s)")
        return "\n".join(lines)


def _stderr_count(nb_path: Path) -> int:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return sum(1 for c in nb.get("cells", []) for o in c.get("outputs", [])
               if o.get("output_type") == "stream" and o.get("name") == "stderr")


def build(source: Path, out: Path, wanted: list[str] | None = None,
          labs: Path | None = None, docs: Path | None = None) -> BookReport:
    """Write the book of the executed chapters in ``source`` into ``out`` (replaced);
    exercise starters come from ``labs`` (default: the source tree's ``labs/``), the
    guides from ``docs`` (default: the ``docs/`` beside ``labs``)."""
    chapters = find_chapters(Path(source), wanted)
    labs = Path(labs) if labs else default_labs()
    guides = find_guides(Path(docs) if docs else labs.parent / "docs")
    out = Path(out)
    if out.exists():
        if not (out / "index.html").exists() and any(out.iterdir()):
            raise bad_value("out", str(out), "an empty folder or a previous book (it is "
                            "replaced): this one holds other files")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    pages: dict[str, tuple[str, list[Section]]] = {}
    for ch in chapters:
        body, sections = render_chapter(ch, chapters, labs, guides)
        (out / ch.page).write_text(body, encoding="utf-8")
        pages[ch.page] = (ch.title, sections)
    for guide in guides:
        body, sections = render_guide(guide, chapters, guides)
        (out / guide.page).write_text(body, encoding="utf-8")
        pages[guide.page] = (guide.title, sections)
    if guides:
        copy_images(guides[0].source.parent, out)
    (out / "index.html").write_text(index_page(chapters, guides), encoding="utf-8")
    (out / "search-index.js").write_text(search_index(pages), encoding="utf-8")
    for asset in ASSETS:
        shutil.copyfile(RESOURCES / asset, out / asset)
    external = external_references(out)
    if external:
        raise RuntimeError("the book would need the network to show: "
                           + "; ".join(external[:5]))
    return BookReport(out, chapters,
                      {ch.name: sum(len(p.presses) for p in ch.panels.values())
                       for ch in chapters},
                      {ch.name: _stderr_count(ch.notebook) for ch in chapters}, guides)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m deliverylab.classroom.course.book",
        description="Build the static course book from executed chapters (make course's "
                    "output); no chapter is executed again.")
    parser.add_argument("chapters", nargs="*", help="chapters, by name or prefix "
                        "(default: every executed chapter in --from)")
    parser.add_argument("--from", dest="source", type=Path, default=Path("results/course"),
                        help="folder of executed chapters (default: results/course)")
    parser.add_argument("--labs", type=Path, default=None,
                        help="folder of the chapters, for exercise starters (default: labs/)")
    parser.add_argument("--docs", type=Path, default=None,
                        help="folder of the guides to publish beside the chapters (default: "
                             "docs/ beside --labs)")
    parser.add_argument("--out", type=Path, default=Path("results/book"),
                        help="folder to write the book into, replaced (default: "
                             "results/book)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = build(args.source, args.out, args.chapters, args.labs, args.docs)
    except ValueError as exc:  # bad_value: one line naming the bad value
        return command_failed("book", exc, 2)
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
