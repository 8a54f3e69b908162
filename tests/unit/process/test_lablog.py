"""The lab's log: the library's notes go to a file, never to the student's stderr."""

from __future__ import annotations

import logging
import warnings

import pytest

from deliverylab.process import lablog


@pytest.fixture
def log_file(tmp_path, monkeypatch):
    target = tmp_path / "lab.log"
    monkeypatch.setenv(lablog.LOG_ENV, str(target))
    return target


def test_a_library_warning_goes_to_the_file_and_not_to_stderr(log_file, capfd):
    lablog.logger("deliverylab.notebook.plots").warning("figure grew to fit its legend")
    lablog.logger("nemesis").info("a note")  # named without the prefix: gets it
    logging.getLogger("deliverylab.something").error("any deliverylab.* logger")
    for handler in logging.getLogger(lablog.ROOT).handlers:
        handler.flush()
    text = log_file.read_text()
    assert "deliverylab.notebook.plots: figure grew" in text
    assert "INFO deliverylab.nemesis: a note" in text
    assert "any deliverylab.* logger" in text
    assert capfd.readouterr().err == ""


def test_the_log_file_exists_only_once_something_is_logged(log_file):
    lablog.logger("quiet")
    assert not log_file.exists()


def test_warnings_to_log_takes_its_category_and_passes_the_others_on(log_file):
    class Noted(UserWarning):
        pass

    with pytest.warns(DeprecationWarning, match="still shown"):
        with lablog.warnings_to_log(Noted, "deliverylab.test") as noted:
            warnings.warn(Noted("the quorum is gone, on purpose"), stacklevel=2)
            warnings.warn("still shown", DeprecationWarning, stacklevel=2)
    assert noted == ["the quorum is gone, on purpose"]
    assert "Noted: the quorum is gone, on purpose" in log_file.read_text()


def test_warnings_to_log_notes_them_even_when_the_body_fails(log_file):
    class Noted(UserWarning):
        pass

    with pytest.raises(RuntimeError):
        with lablog.warnings_to_log(Noted, "deliverylab.test") as noted:
            warnings.warn(Noted("before the failure"), stacklevel=2)
            raise RuntimeError("boom")
    assert noted == ["before the failure"]


def test_a_normal_exit_removes_the_default_log_and_keeps_a_named_one(tmp_path):
    """Run in a child Python: its atexit is the one that counts."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("from deliverylab.process import lablog; import sys\n"
            "lablog.logger('x').warning('noted'); assert lablog.path().exists()\n"
            "print(lablog.path())\n")
    lib = str(Path(lablog.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": lib, "TMPDIR": str(tmp_path)}
    env.pop(lablog.LOG_ENV, None)
    default = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
    assert default.stderr == ""
    assert default.stdout.strip().startswith(str(tmp_path))
    assert not Path(default.stdout.strip()).exists()
    named = tmp_path / "kept.log"
    subprocess.run([sys.executable, "-c", code], env={**env, lablog.LOG_ENV: str(named)},
                   check=True, capture_output=True)
    assert "noted" in named.read_text()


def test_a_log_left_behind_when_the_temporary_folder_changed_is_removed_too(tmp_path):
    """A process whose temporary folder changes while it runs (a test's TMPDIR) opens a
    second default log; at exit both go, not only the last (the unit suite left one in
    /tmp per run)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    code = ("from deliverylab.process import lablog; import tempfile\n"
            "lablog.logger('x').warning('one')\n"
            f"tempfile.tempdir = {str(second)!r}\n"
            "lablog.logger('x').warning('two')\n"
            "print(sorted(p.name for p in __import__('pathlib').Path("
            f"{str(tmp_path)!r}).rglob('*.log')))\n")
    lib = str(Path(lablog.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": lib, "TMPDIR": str(first)}
    env.pop(lablog.LOG_ENV, None)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert run.stdout.count(".log") == 2, run.stdout  # both were written while it ran
    assert list(tmp_path.rglob("*.log")) == []
