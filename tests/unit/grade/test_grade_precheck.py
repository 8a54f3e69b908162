"""Bad student code is named in one line, without running it, in well under 2 s."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from deliverylab.grade import EXERCISES, exercise, grade
from deliverylab.grade.precheck import problem

PARAMS = ("consumer", "producer", "output_topic", "running")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(text)
    return path


def test_a_syntax_error_names_file_line_and_error(tmp_path: Path):
    path = write(tmp_path, "def consume_loop(c, p, o, r):\n    while r(:\n        pass\n")
    line = problem(path, "consume_loop", PARAMS)
    assert line is not None and line.startswith(f"{path}:2: SyntaxError: ")
    assert "\n" not in line


def test_an_error_only_the_compiler_sees_is_named_too(tmp_path: Path):
    path = write(tmp_path, "def consume_loop(c, p, o, r):\n    return\n\nbreak\n")
    assert problem(path, "consume_loop", PARAMS).startswith(f"{path}:4: SyntaxError")


def test_a_missing_function_or_a_wrong_signature_is_named(tmp_path: Path):
    path = write(tmp_path, "def consume(c, p, o, r):\n    pass\n")
    assert problem(path, "consume_loop", PARAMS) == (
        f"{path}:1: defines no function consume_loop(consumer, producer, output_topic, "
        "running) at module level")
    path = write(tmp_path, "import os\n\ndef consume_loop(consumer, producer):\n    pass\n")
    assert problem(path, "consume_loop", PARAMS) == (
        f"{path}:3: consume_loop(consumer, producer) has the wrong signature; the "
        "contract calls consume_loop(consumer, producer, output_topic, running)")
    path = write(tmp_path, "def consume_loop(a, b, c, d, e):\n    pass\n")
    assert "wrong signature" in problem(path, "consume_loop", PARAMS)
    path = write(tmp_path, "async def consume_loop(a, b, c, d):\n    pass\n")
    assert "is async" in problem(path, "consume_loop", PARAMS)


def test_other_spellings_of_the_right_signature_are_accepted(tmp_path: Path):
    for text in ("def consume_loop(c, p, o, r):\n    pass\n",
                 "def consume_loop(c, p, o, r, extra=1):\n    pass\n",
                 "def consume_loop(*args):\n    pass\n",
                 "def consume_loop(c, *rest, **kw):\n    pass\n",
                 "def _impl(*a):\n    pass\n\nconsume_loop = _impl\n",
                 "from os import getcwd as consume_loop\n"):
        assert problem(write(tmp_path, text), "consume_loop", PARAMS) is None, text


def test_no_module_level_code_runs(tmp_path: Path):
    marker = tmp_path / "ran"
    path = write(tmp_path, f"open({str(marker)!r}, 'w').close()\n"
                 "def consume_loop(c, p, o, r):\n    pass\n")
    assert problem(path, "consume_loop", PARAMS) is None
    assert not marker.exists()


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_every_shipped_file_passes_the_precheck(ex_id: str):
    ex = EXERCISES[ex_id]
    for path in [ex.starter, ex.reference, *ex.wrong().values()]:
        assert problem(path, ex.function, ex.params) is None, path


def test_grade_names_a_broken_file_in_one_line_without_a_cluster(tmp_path: Path, capsys):
    path = write(tmp_path, "def consume_loop(c, p, o, r)\n    pass\n")
    t0 = time.monotonic()
    report = grade("02", path, cluster=object())  # any use of the cluster would raise
    assert time.monotonic() - t0 < 2
    assert report.runs == [] and not report.ok and report.failed == 1
    out = capsys.readouterr().out.strip()
    assert out == report.broken and out.startswith(f"{path}:1: SyntaxError")
    assert report.to_dict()["broken"] == report.broken


def test_the_cli_exits_1_with_the_line(tmp_path: Path, capsys):
    from deliverylab.grade.__main__ import main

    path = write(tmp_path, "x = 1\n")
    assert main(["06", str(path)]) == 1
    assert "defines no function handle(db, message_id, order, where, payments)" in \
        capsys.readouterr().out
    assert exercise("06").params == ("db", "message_id", "order", "where", "payments")
