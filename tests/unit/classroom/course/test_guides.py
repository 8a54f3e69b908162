"""The guides of docs/ in the course book: which pages, in which order, their anchors and
links, and every link of the real docs/ leading to a section that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deliverylab.classroom.course import book
from deliverylab.classroom.course import guides as guide_pages

from .test_book import make_course, make_docs

ROOT = Path(__file__).resolve().parents[4]
DOCS = ROOT / "docs"


def test_the_guides_are_every_page_of_docs_the_instructors_guide_first(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("zebra", "measurements", "whats-here", "instructors", "troubleshooting"):
        (docs / f"{name}.md").write_text(f"# Page {name}\n\ntext\n")
    (docs / "notes.txt").write_text("not a guide")
    guides = guide_pages.find_guides(docs)
    assert [g.name for g in guides] == ["instructors", "troubleshooting", "measurements",
                                        "whats-here", "zebra"]
    assert [g.page for g in guides][:2] == ["guide-instructors.html",
                                            "guide-troubleshooting.html"]
    assert guides[0].title == "Page instructors"
    assert guide_pages.find_guides(tmp_path / "absent") == []
    assert guide_pages.find_guides(None) == []


def test_the_real_docs_folder_is_published_whole():
    names = sorted(p.stem for p in DOCS.glob("*.md"))
    guides = guide_pages.find_guides(DOCS)
    assert sorted(g.name for g in guides) == names
    assert guides[0].name == "instructors"
    assert {"instructors", "measurements", "troubleshooting", "whats-here"} <= set(names)


@pytest.mark.parametrize(("heading", "anchor"), [
    ("The offline bundle", "the-offline-bundle"),
    ("Kafka&#x27;s own tools", "kafkas-own-tools"),
    ("<code>make classroom</code>: a JupyterHub for the class on this host",
     "make-classroom-a-jupyterhub-for-the-class-on-this-host"),
    ("With Docker: a container per student (<code>SPAWNER=docker</code>)",
     "with-docker-a-container-per-student-spawnerdocker"),
    ("The classroom hub: three students, tested", "the-classroom-hub-three-students-tested"),
])
def test_a_heading_gets_githubs_anchor(heading: str, anchor: str):
    assert guide_pages.slug(heading) == anchor


def test_links_lead_to_the_books_pages_and_raw_html_is_text():
    links = {"measurements.md": "guide-measurements.html"}
    out = guide_pages.markdown_html(
        "# A\n\n## Same\n\n## Same\n\nSee [m](measurements.md#the-grader), "
        "[r](../README.md), [w](https://kafka.apache.org/), [s](#same).\n\n"
        "dlab-<name> and <script>alert(1)</script>\n", links)
    assert '<h2 id="same">' in out and '<h2 id="same-1">' in out
    assert 'href="guide-measurements.html#the-grader"' in out
    assert 'href="index.html"' in out and 'href="https://kafka.apache.org/"' in out
    assert 'href="#same"' in out
    assert "<script>" not in out and "&lt;name&gt;" in out


def test_a_guide_page_has_the_sidebar_its_sections_and_a_searchable_index(tmp_path: Path):
    out = tmp_path / "book"
    report = book.build(make_course(tmp_path / "course"), out, docs=make_docs(tmp_path / "docs"))
    assert [g.name for g in report.guides] == ["instructors", "measurements"]
    assert "2 guide(s)" in report.summary()
    page = (out / "guide-instructors.html").read_text()
    # The book's sidebar: every chapter, every guide, this guide's sections.
    assert "href='00_tour.html'" in page and "href='guide-measurements.html'" in page
    assert "<ul class='dl-book-sections'><li class='dl-book-h2'><a href='#before-the-day'>" \
        in page
    assert 'href="guide-measurements.html#the-grader"' in page
    assert 'id="the-grader"' in (out / "guide-measurements.html").read_text()
    assert "<table>" in page and 'src="img/dot.png"' in page
    assert (out / "img" / "dot.png").is_file()
    # The contents page lists the guides after the chapters, with their first lines.
    index = (out / "index.html").read_text()
    assert index.index("02_at_least_once.html") < index.index("guide-instructors.html")
    assert "How to run the course for a class." in index
    # A chapter's sidebar reaches the guides too.
    assert "href='guide-instructors.html'" in (out / "00_tour.html").read_text()
    search = (out / "search-index.js").read_text()
    assert '"page": "guide-measurements.html", "anchor": "the-grader"' in search
    assert book.external_references(out) == []


def test_every_link_between_the_real_guides_leads_to_a_section(tmp_path: Path):
    """A guide's link to another guide's section (``measurements.md#the-grader``) must
    find that heading: a renamed heading would otherwise leave a dead link in the book."""
    guides = guide_pages.find_guides(DOCS)
    pages = {g.page: guide_pages.guide_page(g, guides, "") for g in guides}
    ids = {page: set(re.findall(r' id="([^"]+)"', text)) for page, text in pages.items()}
    dead = []
    for page, text in pages.items():
        for target, anchor in re.findall(r'href="(guide-[\w-]+\.html|)#([^"]+)"', text):
            if anchor not in ids.get(target or page, set()):
                dead.append(f"{page}: {target}#{anchor}")
        for target in re.findall(r'href="([\w-]+\.html)"', text):
            assert target in pages or target == "index.html", (page, target)
    assert dead == []
