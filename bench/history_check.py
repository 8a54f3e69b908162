"""How long ``History.save`` and ``checker.check`` take on a History of 1M ops. Figures.

Run: ``PYTHONPATH=lib .venv/bin/python bench/history_check.py [--values 1000000] [--runs 3]``
(through ``/work/shared/tools/heavy`` for figures that are reported).

No cluster: the History and the read-back are built here, seeded, shaped like
``bench/inspector.py``'s data set (one ``send`` op per value on a topic of 3 partitions,
every ``--every``-th value sent and stored a second time) with what a chapter adds to
it: four producers, one of them transactional (commits, aborts, a commit that timed
out), ``info`` and ``fail`` sends, fault ops, and a read-back that holds a lost value,
unseen ones, aborted reads, unexpected records and a reordered pair -- so every
detector has work to do, not only the happy path.

Each figure is the median of ``--runs`` runs; the load average is printed with it.
The saved file's SHA-256 and the check's verdict are printed too, so that two runs
(another version of the code, another machine) can be compared for identical output.

Goals (issue 41): ``History.save`` <= 5 s and ``checker.check`` <= 5 s for 1M ops and
1M reads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deliverylab import checker
from deliverylab.history import History, Op, Read

GOAL_SAVE = 5.0  # seconds, issue 41
GOAL_CHECK = 5.0
TOPIC = "bench"
PARTITIONS = 3
TXN_SIZE = 100  # sends per transaction of the transactional producer


def build(values: int, every: int, seed: int = 41) -> tuple[History, list[Read]]:
    """A History of ~``values`` sends (+ every ``every``-th again) and its read-back.

    Offsets are assigned per partition in send order, as a broker would; the
    anomalies are sprinkled in at fixed rates so that they scale with ``values``.
    """
    rng = random.Random(seed)
    ops: list[Op] = []
    reads: list[Read] = []
    next_offset = [0] * PARTITIONS
    producers = [f"producer-{i}" for i in range(4)]
    txn_producer = producers[3]
    txn_no, in_txn, txn_fate = 0, 0, "commit"
    txn_reads: list[Read] = []
    t = 0.0
    swap = ("producer-0:0", "producer-0:12")  # both ok, both in partition 0

    def store(partition: int, value: str, into: list[Read]) -> int:
        offset = next_offset[partition]
        next_offset[partition] += 1
        into.append(Read(TOPIC, partition, offset, value, "read_committed"))
        return offset

    def send(seq: int) -> None:
        nonlocal t, txn_no, in_txn, txn_fate
        producer = producers[seq % len(producers)]
        value = f"{producer}:{seq}"
        partition = seq % PARTITIONS
        t += 0.000_01
        txn = None
        if producer == txn_producer:
            if in_txn == 0:
                txn_no += 1
                roll = rng.random()
                txn_fate = "abort" if roll < 0.05 else "unknown" if roll < 0.06 else "commit"
            txn = f"{producer}/txn-{txn_no}"
        roll = rng.random()
        if txn is None and roll < 0.004:  # timed out: in the log or not, nobody knows
            offset = store(partition, value, reads) if roll < 0.002 else None
            ops.append(Op(producer, "send", "info", t, (value,), TOPIC, partition, offset,
                          error="_MSG_TIMED_OUT"))
        elif txn is None and roll < 0.005:  # refused: not written (once in 10 it is)
            if roll < 0.0041:
                store(partition, value, reads)
            ops.append(Op(producer, "send", "fail", t, (value,), TOPIC, partition,
                          error="NOT_ENOUGH_REPLICAS"))
        else:
            target = txn_reads if txn is not None else reads
            offset = store(partition, value, target)
            lost = txn is None and roll > 0.9999  # acked, then the record is gone
            if lost:
                target.pop()
            ops.append(Op(producer, "send", "ok", t, (value,), TOPIC, partition, offset,
                          txn=txn))
        if txn is not None:
            in_txn += 1
            if in_txn == TXN_SIZE:
                end(txn)

    def end(txn: str) -> None:
        nonlocal t, in_txn
        t += 0.000_01
        if txn_fate == "commit":
            ops.append(Op(txn_producer, "commit_txn", "ok", t, txn=txn))
            reads.extend(txn_reads)
        elif txn_fate == "unknown":
            ops.append(Op(txn_producer, "commit_txn", "info", t, txn=txn,
                          error="_TIMED_OUT"))
            reads.extend(txn_reads)
        else:  # aborted; a read_uncommitted view would show one in ten of them
            ops.append(Op(txn_producer, "abort_txn", "ok", t, txn=txn))
            reads.extend(txn_reads[:: 10])
        txn_reads.clear()
        in_txn = 0

    for seq in range(values):
        send(seq)
        if seq % 100_000 == 50_000:
            ops.append(Op("nemesis", "fault", "info" if seq % 200_000 else "ok", t,
                          detail="broker 2 paused", fault="pause_broker"))
    for seq in range(0, values, every):  # the second copies
        if seq % len(producers) != 3:
            send(seq)
    if in_txn:
        end(f"{txn_producer}/txn-{txn_no}")
    # A pair stored out of order (seq 12 before seq 0 in partition 0), a record nobody sent.
    where = {r.value: i for i, r in enumerate(reads[:100]) if r.value in swap}
    first, second = (reads[where[v]] for v in swap)
    reads[where[swap[0]]] = Read(TOPIC, first.partition, first.offset, second.value, first.reader)
    reads[where[swap[1]]] = Read(TOPIC, second.partition, second.offset, first.value,
                                 second.reader)
    reads.append(Read(TOPIC, 1, next_offset[1], "ghost:1", "read_committed"))
    # In the order a consumer hands them back: batches of 500 from each partition in turn.
    reads.sort(key=lambda r: (r.offset // 500, r.partition, r.offset))
    return History(ops), reads


def timed(label: str, fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """Median seconds of ``runs`` calls of ``fn`` (each printed) and the last result."""
    seconds, result = [], None
    for attempt in range(runs):
        t0, cpu = time.perf_counter(), time.process_time()
        result = fn()
        seconds.append(time.perf_counter() - t0)
        # CPU seconds beside the wall's: on a loaded machine they say what the code cost.
        print(f"  {label:<28} run {attempt + 1}: {seconds[-1]:6.2f} s   "
              f"(cpu {time.process_time() - cpu:5.2f} s)   load {load()}", flush=True)
    return statistics.median(seconds), result


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def verdict(seconds: float, goal: float) -> str:
    return f"goal <= {goal:g} s  {'MET' if seconds <= goal else 'MISSED'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--values", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=1000,
                        help="send (and store) every N-th value twice (default 1000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--load-back", action="store_true",
                        help="also time History.load of the file and compare it (~15 s)")
    args = parser.parse_args()
    print(f"load average at start: {load()} on {os.cpu_count()} cores")

    t0 = time.perf_counter()
    history, reads = build(args.values, args.every)
    print(f"built {len(history):,} ops and {len(reads):,} reads in "
          f"{time.perf_counter() - t0:.1f} s (not a figure)")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        save_s, _ = timed("History.save", lambda: history.save(path), args.runs)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        size = path.stat().st_size
        if args.load_back:
            load_s, loaded = timed("History.load", lambda: History.load(path), 1)
            same = list(loaded) == list(history)
    check_s, result = timed("checker.check", lambda: checker.check(
        history, reads, allowed={checker.DUPLICATES}), args.runs)
    verdict_digest = hashlib.sha256(
        json.dumps(result.to_dict(), sort_keys=True).encode()).hexdigest()

    print(f"\nfile {size / 1e6:.0f} MB, sha256 {digest[:16]}"
          + (f"; loads back equal: {same}" if args.load_back else ""))
    print(f"check counts {result.counts}; verdict sha256 {verdict_digest[:16]}")
    print(f"\nload average at end: {load()}")
    print(f"goals ({len(history):,} ops, {len(reads):,} reads; median of {args.runs}):")
    print(f"  History.save    {save_s:6.2f} s   {verdict(save_s, GOAL_SAVE)}")
    print(f"  checker.check   {check_s:6.2f} s   {verdict(check_s, GOAL_CHECK)}")
    if args.load_back:
        print(f"  History.load    {load_s:6.2f} s   (one run; no goal)")


if __name__ == "__main__":
    main()
