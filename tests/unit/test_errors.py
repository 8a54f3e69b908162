"""A command's failure is one line: ``name: message`` on stderr and an exit code."""
from __future__ import annotations

import pytest

from deliverylab.errors import BadValue, LabError, command, command_failed


def test_a_failed_command_says_one_line_and_gives_its_code(capsys) -> None:
    assert command_failed("jars", LabError("no network"), 2) == 2
    assert capsys.readouterr().err == "jars: no network\n"


def test_a_wrapped_main_turns_a_lab_error_into_the_line_and_anything_else_raises(
        capsys) -> None:
    @command("bundle failed")
    def main(argv: list[str] | None = None) -> int:
        if argv == ["bad"]:
            raise BadValue("dest='x' is not accepted")
        if argv == ["bug"]:
            raise KeyError("a bug stays a traceback")
        return 0

    assert main([]) == 0
    assert main(["bad"]) == 1
    assert capsys.readouterr().err == "bundle failed: dest='x' is not accepted\n"
    with pytest.raises(KeyError):
        main(["bug"])
