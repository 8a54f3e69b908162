"""Where a headless chapter run spends its time: the slowest cells of executed notebooks.

Run: ``.venv/bin/python bench/chapter_cells.py test-artifacts/labs`` (no cluster, no
heavy queue: it only reads files). Papermill stores each cell's wall time in the
executed notebook (cell metadata ``papermill.duration``); ``make test`` keeps the
chapters it ran in ``test-artifacts/labs*/`` and ``make course`` in ``results/course/``.
For each notebook: its total, then every cell above ``--min`` seconds with its first
line and the ``dl.busy`` / progress lines it printed -- what it waited for -- so suite
time (issue 18) is spent on evidence, not on guesses. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from deliverylab.notebook.chapter import chapter_names


def cell_times(notebook: dict[str, Any]) -> list[tuple[int, float, str, list[str]]]:
    """(cell index, seconds, first source line, its ``...: done in`` lines) per code cell."""
    out = []
    for i, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        seconds = float(cell.get("metadata", {}).get("papermill", {}).get("duration") or 0)
        source = "".join(cell.get("source", ""))
        first = next((line for line in source.splitlines()
                      if line.strip() and not line.lstrip().startswith("#")), "")
        said = []
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            text = text if isinstance(text, str) else "".join(text)
            said += [line for line in text.splitlines()
                     if " done in " in line or (" in " in line and line.endswith(" s"))]
        out.append((i, seconds, first, said))
    return out


def report(path: Path, minimum: float) -> str:
    cells = cell_times(json.loads(path.read_text()))
    lines = [f"{path}: {sum(c[1] for c in cells):.0f} s in {len(cells)} code cells"]
    for i, seconds, first, said in sorted(cells, key=lambda c: -c[1]):
        if seconds < minimum:
            break
        lines.append(f"  {seconds:6.1f} s  [{i}] {first[:90]}")
        lines += [f"             {line.strip()[:100]}" for line in said[:4]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path,
                        help="executed notebooks, or folders holding them")
    parser.add_argument("--min", type=float, default=3.0, help="seconds; smaller cells "
                        "are counted in the total but not listed")
    args = parser.parse_args(argv)
    notebooks = sorted(p for path in args.paths
                       for p in ([path / f"{n}.ipynb" for n in chapter_names(path)]
                                 if path.is_dir() else [path]))
    if not notebooks:
        print(f"no executed chapter notebooks in {', '.join(map(str, args.paths))}",
              file=sys.stderr)
        return 2
    for nb in notebooks:
        print(report(nb, args.min))
    return 0


if __name__ == "__main__":
    sys.exit(main())
