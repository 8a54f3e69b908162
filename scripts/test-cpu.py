"""Where the test suite's CPU went: the per-test lines tests/conftest.py writes
(test-artifacts/test-cpu.jsonl), summed by test file and listed by test, largest first.

Why: on two cores the suite is CPU-bound (a third worker made the cold parallel part no
shorter), so its wall time is its CPU time divided by the cores; this says which tests
to make cheaper. A test's CPU is its process's plus its reaped children's (a chapter's
kernel and JVMs); a session fixture's cluster and containers are not in it.

    python scripts/test-cpu.py [FILE] [--top N]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", default=str(ROOT / "test-artifacts" / "test-cpu.jsonl"))
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    path = Path(args.file)
    if not path.is_file():
        print(f"test-cpu: no {path}: run the tests first", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    total = sum(r["cpu_s"] for r in rows)
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        f = by_file[r["test"].split("::")[0]]
        f[0] += r["cpu_s"]
        f[1] += r["wall_s"]
        f[2] += 1
    print(f"test CPU: {len(rows)} tests, {total:.0f} CPU-s in all "
          f"(wall summed over workers {sum(r['wall_s'] for r in rows):.0f} s)")
    print(f"\nby file (top {args.top}):      CPU-s   wall-s  tests")
    for name, (cpu, wall, n) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {cpu:8.0f} {wall:8.0f} {n:6d}  {name}")
    print(f"\nby test (top {args.top}):       CPU-s   wall-s")
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[:args.top]:
        print(f"  {r['cpu_s']:8.0f} {r['wall_s']:8.0f}  {r['test']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
