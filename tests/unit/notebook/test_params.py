"""Chapter parameters as people type them: papermill -p text, -y lists, bad values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from deliverylab.classroom.course import run as course
from deliverylab.errors import BadValue
from deliverylab.notebook import params

LABS = Path(__file__).resolve().parents[3] / "labs"
README = Path(__file__).resolve().parents[3] / "README.md"


defaults = course.defaults  # the chapter's parameters cell, executed


@pytest.mark.parametrize("chapter", sorted(params.SPECS))
def test_every_chapter_declares_exactly_its_checked_parameters(chapter):
    scope = defaults(chapter)
    assert set(scope) == set(params.SPECS[chapter])
    params.check(chapter, scope)  # the defaults pass


@pytest.mark.parametrize("chapter", sorted(params.SPECS))
def test_list_parameters_accept_both_papermill_forms_and_refuse_a_typo(chapter):
    for name, spec in params.SPECS[chapter].items():
        if spec.kind != "names":
            continue
        good = spec.choices[0]
        forms = {
            "-p (JSON text)": json.dumps([good]),  # what `-p faults '["x"]'` delivers
            "-p (YAML flow text)": f"[{good}]",
            "-y": yaml.safe_load(f"{name}: [{good}]")[name],  # -y delivers a list
        }
        for form, value in forms.items():
            scope = {**defaults(chapter), name: value}
            assert params.check(chapter, scope)[name] == [good], form
            assert scope[name] == [good]  # normalised in place, for the cells below
        typo = good[:-1] + good[-1].swapcase() + "x"
        for value in (json.dumps([typo]), [typo]):
            with pytest.raises(BadValue) as info:
                params.check(chapter, {**defaults(chapter), name: value})
            message = str(info.value)
            assert "\n" not in message and repr(typo) in message
            assert all(choice in message for choice in spec.choices)


def test_a_list_that_is_not_a_list_shows_both_forms():
    with pytest.raises(BadValue) as info:
        params.check("02_at_least_once", {**defaults("02_at_least_once"),
                                          "faults": "lose_ack"})
    message = str(info.value)
    assert "-p faults '[\"lose_ack\"]'" in message and "-y 'faults: [lose_ack]'" in message


@pytest.mark.parametrize("name,value,accepted", [
    ("brokers", 0, "from 1 to 5"), ("brokers", "three", "whole number"),
    ("rate", -1.0, "number from"), ("values", 2.5, "whole number"),
    ("results_path", "", "file path"), ("crash_after", 60, "below values"),
    ("backend", "kubernetes", "one of 'auto', 'docker', 'local'"),
])
def test_bad_numbers_and_paths_are_one_line(name, value, accepted):
    with pytest.raises(BadValue, match=accepted) as info:
        params.check("02_at_least_once", {**defaults("02_at_least_once"), name: value})
    assert f"{name}=" in str(info.value)


def test_numbers_typed_as_text_are_parsed():
    scope = {**defaults("02_at_least_once"), "brokers": "3", "rate": "12.5"}
    assert params.check("02_at_least_once", scope)["brokers"] == 3 and scope["rate"] == 12.5


def test_the_course_passes_only_checked_parameters():
    for table in (course.SMALL, course.HEADLESS, course.PREDICTIONS):
        for chapter, settings in table.items():
            scope = {**defaults(chapter), **settings}
            params.check(chapter, scope)


def test_a_headless_course_predicts_for_every_chapter_that_asks():
    asking = {c for c, specs in params.SPECS.items()
              if any(s.kind == "prediction" for s in specs.values())}
    assert set(course.PREDICTIONS) == asking
    for chapter in asking:
        wanted = {n for n, s in params.SPECS[chapter].items() if s.kind == "prediction"}
        assert set(course.PREDICTIONS[chapter]) == wanted, chapter


def test_the_readme_commands_pass_the_checks():
    """Each chapter's headless command in the README, parameter forms as papermill
    delivers them (-p values are text when they look like JSON lists)."""
    text = README.read_text()
    commands = re.findall(r"^papermill labs/(\d\d[a-z]?_\w+)\.ipynb \S+ (.*)$", text, re.M)
    assert {c for c, _ in commands} == set(params.SPECS)
    for chapter, args in commands:
        scope = defaults(chapter)
        for flag, name, value in re.findall(r"(-p|-y) (\w+)? ?'([^']*)'", args):
            if flag == "-p":
                scope[name] = value
            else:
                scope.update(yaml.safe_load(value))
        params.check(chapter, scope)


@pytest.mark.parametrize("chapter", sorted(params.SPECS))
def test_papermill_reads_every_line_of_the_parameters_cell(chapter, caplog):
    """``papermill --help-notebook`` (and papermill's run log) infers the parameters from
    the cell's lines: a line it cannot parse (a second ``=``, as in a ``>=`` inside a
    comment) is logged "Unable to parse line" and its parameter left out of the help."""
    import ast

    import papermill

    with caplog.at_level("WARNING", logger="papermill"):
        found = papermill.inspect_notebook(str(LABS / f"{chapter}.ipynb"))
    assert [r.getMessage() for r in caplog.records] == []
    assert set(found) == set(params.SPECS[chapter])
    scope = defaults(chapter)
    assert {name: ast.literal_eval(p["default"]) for name, p in found.items()} == scope
