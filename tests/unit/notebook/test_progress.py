"""Progress bars read well headless: text lines outside a notebook."""

from __future__ import annotations

from deliverylab.notebook.progress import busy, progress


def test_progress_and_busy_print_text_outside_a_notebook(capsys) -> None:
    with progress(8, "producing") as bar:
        for n in range(1, 9):
            bar(n)
    with busy("waiting"):
        pass
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out[:3]] == [
        "producing: 2/8", "producing: 4/8", "producing: 6/8"]  # one line per quarter
    assert out[3].startswith("producing: 8/8 in ")
    assert out[4:] == ["waiting...", out[5]] and out[5].startswith("waiting: done in ")
