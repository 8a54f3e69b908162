"""librdkafka's abort race, reproduced without a Kafka cluster: N iterations, counted.

Run: ``.venv/bin/python bench/txn_abort_race.py [-n 50] [--load 2] [--debug]``
(through ``/work/shared/tools/heavy`` when ``--load`` starts CPU hogs).

What CI saw twice (chapter 09's hanging transaction, test_reproductions): the Python
process killed by SIGABRT, librdkafka 2.16.0 printing ``rd_kafka_txn_set_state:
Assertion `!*"BUG: Invalid transaction state transition"' failed`` after logging
"Invalid transaction state transition attempted: Ready -> AbortableError". The race
is librdkafka's own: a transactional message that outlives ``message.timeout.ms`` is
failed by the broker thread's timeout scan (``rd_kafka_broker_toppar_msgq_scan``: its
delivery report, the outstanding count down to zero) and only then, in the same
thread, is the transaction marked abortable with an epoch bump
(``rd_kafka_idemp_drain_epoch_bump``). An ``abort_transaction()`` that waits for that
message wakes at the delivery report, sends EndTxn, is answered and returns the
transaction to Ready -- and if all that happened before the broker thread reached the
mark, the mark is an invalid transition and librdkafka asserts.

Each iteration runs in a child process (a crash is a signal, counted) against
librdkafka's in-process mock cluster (:class:`client_callbacks.MockCluster`): the mock
broker answers Produce only after 5 s, the client's ``socket.timeout.ms`` is 1 s and
``message.timeout.ms`` 2 s, so the one message times out while ``abort_transaction``
waits for it. Two cases:

* ``abort``: a plain transactional Producer aborts at once (the race, without the lab).
* ``lab``: the lab's way (chapter 09's ``hanging_transaction``): flush until the
  message's delivery report came, wait for librdkafka's "transaction failed" line
  (``deliverylab.clients.wait_transaction_failed``), then abort. Expected: no crash.

``--debug`` turns on librdkafka's ``eos,msg`` debug logging (the plain client writes
it to the child's stderr from librdkafka's threads, the lab's queues it), which widens
the window between the two steps; two CPU hogs widen it further.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from client_callbacks import (
    MockCluster,
    chosen_cases,
    client_version,
    loop_arguments,
    run_loop,
)

CASES = ("abort", "lab")
TOPIC = "bench-abort-race"
#: How long the mock broker sits on each Produce, against the client's timeouts below.
PRODUCE_RTT_MS = 5000


def producer_settings(mc: MockCluster, name: str) -> dict[str, Any]:
    """A transactional producer whose one message times out while the mock holds it."""
    settings: dict[str, Any] = {
        "bootstrap.servers": mc.bootstrap, "transactional.id": f"tx-{name}",
        "client.id": name, "socket.timeout.ms": 1000, "message.timeout.ms": 2000,
        "transaction.timeout.ms": 60_000}
    if os.environ.get("RACE_DEBUG"):
        settings["debug"] = "eos,msg"
    return settings


def case(name: str) -> dict[str, Any]:
    from confluent_kafka import Producer

    mc = MockCluster()
    mc.create_topic(TOPIC)
    settings = producer_settings(mc, name)
    if name == "lab":
        from deliverylab.clients import CLIENT_LOG, wait_transaction_failed

        settings["logger"] = CLIENT_LOG
    producer = Producer(settings)
    producer.init_transactions(30)
    producer.begin_transaction()
    mc.slow_produce(4, PRODUCE_RTT_MS)  # every attempt in the message's life times out
    reports: list[str] = []
    producer.produce(TOPIC, b"x", on_delivery=lambda err, msg: reports.append(
        err.name() if err else "ok"))
    producer.poll(0.2)  # the Produce is on its way
    if name == "lab":
        seen = CLIENT_LOG.txn_failed.get(name, 0)
        producer.flush(10)
        wait_transaction_failed(producer, name, seen)
    producer.abort_transaction(30)
    producer.poll(0)
    return {"outcome": "aborted", "reports": reports}


def child(name: str) -> None:
    print("RESULT " + json.dumps(case(name)), flush=True)


def main() -> None:
    ap = loop_arguments(__doc__, CASES)
    ap.add_argument("--debug", action="store_true",
                    help="librdkafka debug logging eos,msg (widens the window)")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    cases = chosen_cases(args, CASES)
    if args.debug:
        os.environ["RACE_DEBUG"] = "1"
    import confluent_kafka

    lib = str(Path(__file__).resolve().parents[1] / "lib")
    print(f"confluent-kafka {client_version()}, librdkafka "
          f"{confluent_kafka.libversion()[0]}, Python {sys.version.split()[0]}; "
          f"{args.load} CPU hog(s), debug {'on' if args.debug else 'off'}")
    results = run_loop(args, cases, lib, Path(__file__).resolve())
    counts = {c: Counter(r["outcome"] for r in results[c]) for c in cases}
    reports = {c: results[c][0].get("reports") for c in cases}  # the first run's reports
    tails = {(c, r["outcome"]): r["tail"] for c in cases for r in reversed(results[c])
             if "tail" in r}
    for name in cases:
        print(f"  {name:6s} " + ", ".join(f"{k}: {v}" for k, v in counts[name].most_common())
              + f"  (first delivery reports: {reports.get(name)})")
    for (name, outcome), tail in sorted(tails.items()):
        asserted = [ln for ln in tail.splitlines() if "Assertion" in ln or "BUG" in ln]
        print(f"\n{name} / {outcome}: " + ("\n  ".join(asserted) or tail[-600:]))


if __name__ == "__main__":
    main()
