"""java.record_archive: an archive is moved into place whole, or not at all."""

from __future__ import annotations

import sys
from pathlib import Path

from deliverylab.runtime.java import record_archive


def _writer(code: str):
    """A stand-in for a recording JVM: a Python process given the partial file's path."""
    return lambda partial: [sys.executable, "-c", code, str(partial)]


def test_a_written_archive_is_renamed_to_its_final_name(tmp_path: Path):
    final = tmp_path / "x.jsa"
    got = record_archive(final, _writer(
        "import sys; open(sys.argv[1], 'wb').write(b'archive')"), timeout=30)
    assert got == final and final.read_bytes() == b"archive"
    assert not (tmp_path / "x.partial.jsa").exists()


def test_a_failed_or_slow_recording_leaves_no_file(tmp_path: Path):
    final = tmp_path / "x.jsa"
    half = "import sys; open(sys.argv[1], 'wb').write(b'half'); "
    assert record_archive(final, _writer(half + "sys.exit(3)"), timeout=30) is None
    assert record_archive(final, _writer(half + "import time; time.sleep(30)"),
                          timeout=1) is None
    assert record_archive(final, _writer("pass"), timeout=30) is None  # wrote none
    assert list(tmp_path.iterdir()) == []
