"""What the book's sidebar and search know of a page: its sections.

A rendered page (a chapter from nbconvert, a guide from Markdown) is read back for its
headings and the text under each: the sidebar lists a page's sections, and the search
(``search-index.js``, a script because a page opened from a folder may not fetch a JSON
file) looks through every section of every page. Split from :mod:`.book`, which builds
the pages, so that both kinds of page share one reading of them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser


@dataclass
class Section:
    """A heading of a page and the text under it (for the sidebar and the search)."""

    level: int
    anchor: str
    heading: str
    text: str = ""


class _Outline(HTMLParser):
    """Headings with ids and the text under each, from a rendered page's ``<main>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = [Section(0, "", "")]
        self._skip = 0  # inside <style>/<script>
        self._heading: Section | None = None
        self._main = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "main":
            self._main = True
        elif tag in ("style", "script"):
            self._skip += 1
        elif self._main and tag in ("h1", "h2", "h3") and dict(attrs).get("id"):
            self._heading = Section(int(tag[1]), dict(attrs)["id"] or "", "")
            self.sections.append(self._heading)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script"):
            self._skip = max(0, self._skip - 1)
        elif tag in ("h1", "h2", "h3"):
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._skip or not self._main:
            return
        if self._heading is not None:
            self._heading.heading += data.replace("\u00b6", "")
        else:
            self.sections[-1].text += data


def outline(page: str) -> list[Section]:
    """The sections of a rendered page, text squeezed to single spaces."""
    parser = _Outline()
    parser.feed(page)
    out = []
    for s in parser.sections:
        s.heading = " ".join(s.heading.split())
        s.text = " ".join(s.text.split())
        if s.heading or s.text:
            out.append(s)
    return out


_HEADING_ID = re.compile(r'(<h[1-6] id=")([^"]+)(">)(.*?)(<a class="anchor-link" href="#)'
                         r'\2(">)', re.S)


def unique_heading_ids(page: str) -> str:
    """The page with every heading's id (and its anchor link) made unique.

    Why: nbconvert makes a heading's id from its text, so a chapter with two "What you
    saw" headings had two ``id="What-you-saw"``, and the sidebar's link (and the
    search's) led to the first whichever was meant. The second becomes
    ``What-you-saw-2``, and so on."""
    seen: dict[str, int] = {}

    def renamed(m: re.Match[str]) -> str:
        anchor = m.group(2)
        seen[anchor] = seen.get(anchor, 0) + 1
        if seen[anchor] > 1:
            anchor = f"{anchor}-{seen[anchor]}"
        return f"{m.group(1)}{anchor}{m.group(3)}{m.group(4)}{m.group(5)}{anchor}{m.group(6)}"

    return _HEADING_ID.sub(renamed, page)


def search_index(pages: dict[str, tuple[str, list[Section]]]) -> str:
    """``search-index.js``: every section's heading and text, as a script (a page opened
    from a folder may not fetch() a JSON file; it may load a script)."""
    entries = []
    for page, (title, sections) in pages.items():
        for s in sections:
            entries.append({"page": page, "anchor": s.anchor, "chapter": title,
                            "heading": s.heading or title, "text": s.text[:4000]})
    return "window.DL_BOOK_INDEX = " + json.dumps(entries, ensure_ascii=False) + ";\n"
