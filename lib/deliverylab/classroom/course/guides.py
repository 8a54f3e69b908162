"""The guides of ``docs/`` as pages of the course book, beside the chapters.

An instructor planning a workshop needs the instructors' guide, the troubleshooting
table and the measured figures where the students' reading is: in the book, offline.
So :func:`deliverylab.classroom.course.book.build` renders every ``docs/*.md`` into a page of
the same folder, with the book's sidebar and search (the sidebar and the search index
are the book's; this module only turns Markdown into a page body).

Markdown to HTML with mistune, the renderer nbconvert already depends on (no new
package, nothing fetched). Two things GitHub does, the book does too, so that a link
that works on GitHub works in the book: a heading's id is GitHub's slug of its text
(``#the-offline-bundle``), and a link to another guide (``measurements.md#the-grader``)
leads to that guide's page. Raw HTML in a guide is shown as text, never run.
"""

from __future__ import annotations

import html
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import bad_value

#: The guides' order in the sidebar and the contents: the instructors' guide first (it
#: is what the book's readers other than students come for); any other page after
#: these, by name.
ORDER = ("instructors", "troubleshooting", "measurements", "the-lab", "whats-here")
#: A guide page's file name: kept apart from the chapters' ``NN_topic.html``.
PREFIX = "guide-"
#: A guide's images live here (``docs/img``) and are copied beside the pages.
IMAGES = "img"

#: What GitHub drops from a heading's text to make its anchor: anything but letters,
#: digits, spaces, hyphens and underscores.
_NOT_SLUG = re.compile(r"[^\w\- ]", re.UNICODE)
_TAG = re.compile(r"<[^>]+>")

#: The page's own look: the chapters carry JupyterLab's stylesheet, a guide only the
#: book's, so tables and code get the few rules they need here.
_STYLE = """<style>
.dl-book-guide { font: 15px/1.5 system-ui, sans-serif; color: #1e1e1e; }
.dl-book-guide table { border-collapse: collapse; margin: 12px 0; display: block;
  overflow-x: auto; }
.dl-book-guide th, .dl-book-guide td { border: 1px solid #ccc; padding: 4px 8px;
  vertical-align: top; text-align: left; }
.dl-book-guide th { background: #f3f5f8; }
.dl-book-guide pre { background: #f6f8fa; padding: 8px 12px; overflow-x: auto; }
.dl-book-guide code { background: #f6f8fa; padding: 0 3px; font-size: 90%; }
.dl-book-guide pre code { padding: 0; }
.dl-book-guide img { max-width: 100%; }
</style>"""


@dataclass(frozen=True)
class Guide:
    """One ``docs/*.md`` page: its name (the file's stem), source and title."""

    name: str
    source: Path
    title: str

    @property
    def page(self) -> str:
        return f"{PREFIX}{self.name}.html"

    def summary(self, limit: int = 240) -> str:
        """The guide's first paragraph as plain text, for the contents page."""
        text = self.source.read_text(encoding="utf-8")
        for block in re.split(r"\n\s*\n", text):
            block = block.strip()
            if block and not block.startswith(("#", "|", "```", "-", "*")):
                plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", " ".join(block.split()))
                plain = plain.replace("`", "").replace("**", "")
                return plain if len(plain) <= limit else plain[:limit].rsplit(" ", 1)[0] + "..."
        return ""


def _title(text: str, fallback: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


def find_guides(docs: Path | None) -> list[Guide]:
    """The guides in ``docs`` (``*.md``), in :data:`ORDER`; none when the folder is
    absent (a book built where the source tree's ``docs/`` is not)."""
    if docs is None or not Path(docs).is_dir():
        return []
    files = sorted(Path(docs).glob("*.md"))
    rank = {name: i for i, name in enumerate(ORDER)}
    files.sort(key=lambda p: (rank.get(p.stem, len(ORDER)), p.stem))
    return [Guide(p.stem, p, _title(p.read_text(encoding="utf-8"), p.stem)) for p in files]


def slug(heading_html: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, punctuation dropped, spaces
    as hyphens (``Kafka's own tools`` -> ``kafkas-own-tools``)."""
    text = html.unescape(_TAG.sub("", heading_html)).strip().lower()
    return _NOT_SLUG.sub("", text).replace(" ", "-")


def _renderer(links: dict[str, str]) -> Any:
    """A mistune renderer with GitHub's heading ids and the book's links."""
    from mistune.renderers.html import HTMLRenderer

    class GuideRenderer(HTMLRenderer):
        def __init__(self) -> None:
            super().__init__(escape=True)
            self.seen: dict[str, int] = {}

        def heading(self, text: str, level: int, **attrs: Any) -> str:
            anchor = slug(text)
            n = self.seen.get(anchor, 0)
            self.seen[anchor] = n + 1
            if n:  # GitHub's rule for a repeated heading: -1, -2, ...
                anchor = f"{anchor}-{n}"
            return super().heading(text, level, id=anchor)

        def link(self, text: str, url: str, title: str | None = None) -> str:
            return super().link(text, book_link(url, links), title)

    return GuideRenderer()


def book_link(url: str, links: dict[str, str]) -> str:
    """Where a guide's link leads in the book: another guide's page (anchor kept), the
    contents page for the README, anything else unchanged."""
    target, _, anchor = url.partition("#")
    name = Path(target).name
    if target and "://" not in target and name.endswith(".md"):
        if name in links:
            return links[name] + (f"#{anchor}" if anchor else "")
        if name == "README.md":
            return "index.html"
    return url


def markdown_html(text: str, links: dict[str, str] | None = None) -> str:
    """A guide's Markdown as HTML (tables included), links made the book's."""
    import mistune

    render = mistune.create_markdown(renderer=_renderer(links or {}), plugins=["table"])
    return str(render(text))


def guide_page(guide: Guide, guides: list[Guide], nav_slot: str) -> str:
    """A guide's whole page; ``nav_slot`` marks where the book puts its sidebar (which
    lists this page's sections, known only once the page is rendered)."""
    links = {f"{g.name}.md": g.page for g in guides}
    body = markdown_html(guide.source.read_text(encoding="utf-8"), links)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1.0'>"
            f"<title>{html.escape(guide.title)}: Delivery Guarantees Lab</title>"
            "<link rel='stylesheet' href='book.css'>" + _STYLE
            + "<script src='search-index.js' defer></script><script src='book.js' defer>"
            "</script></head><body class='dl-book'>" + nav_slot
            + "<main class='dl-book-main dl-book-guide'>" + body
            + "<div class='dl-book-pager'><a href='index.html'>&larr; Contents</a></div>"
            "</main></body></html>")


def copy_images(docs: Path | None, out: Path) -> None:
    """The guides' images (``docs/img``) beside the pages, where their links point."""
    if docs is None or not (Path(docs) / IMAGES).is_dir():
        return
    target = Path(out) / IMAGES
    if target.exists():
        raise bad_value("out", str(out), f"a book folder without an {IMAGES}/ of its own")
    shutil.copytree(Path(docs) / IMAGES, target)
