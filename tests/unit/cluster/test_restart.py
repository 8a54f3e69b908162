"""The thread dump a stalled restart quotes: the telling threads, cut short."""

from __future__ import annotations

from deliverylab.cluster.restart import FRAMES, telling_threads

DUMP = '''Full thread dump OpenJDK 64-Bit Server VM (17.0.13+11 mixed mode, sharing):

"main" #1 prio=5 os_prio=0 cpu=2101.10ms elapsed=71.30s tid=0x1 nid=0x2 waiting on condition
   java.lang.Thread.State: WAITING (parking)
\tat jdk.internal.misc.Unsafe.park(java.base@17.0.13/Native Method)
\tat java.util.concurrent.CompletableFuture.get(java.base@17.0.13/CompletableFuture.java:2096)
\tat kafka.server.BrokerServer.startup(BrokerServer.scala:500)

"kafka-log-cleaner-thread-0" #40 prio=5 os_prio=0 tid=0x3 nid=0x4 waiting on condition
   java.lang.Thread.State: TIMED_WAITING (parking)
\tat jdk.internal.misc.Unsafe.park(java.base@17.0.13/Native Method)

"kafka-2-metadata-loader-event-handler" #30 prio=5 os_prio=0 tid=0x5 nid=0x6 runnable
   java.lang.Thread.State: RUNNABLE
''' + "".join(f"\tat frame.F{i}(F.java:{i})\n" for i in range(40)) + '''
"data-plane-kafka-request-handler-1" #50 daemon prio=5 tid=0x7 nid=0x8 waiting for monitor
   java.lang.Thread.State: BLOCKED (on object monitor)
\tat kafka.server.ReplicaManager.applyDelta(ReplicaManager.scala:2400)

JNI global refs: 24, weak refs: 0
'''


def test_the_main_loader_and_blocked_threads_are_quoted_and_cut():
    quoted = telling_threads(DUMP)
    assert '"main"' in quoted and "BrokerServer.startup" in quoted
    assert "metadata-loader-event-handler" in quoted
    assert "request-handler-1" in quoted and "BLOCKED" in quoted  # blocked on a lock
    assert "log-cleaner" not in quoted  # a thread that says nothing about start-up
    assert "F.java:11" in quoted and f"F.java:{FRAMES}" not in quoted  # cut to FRAMES


def test_a_dump_without_telling_threads_says_so():
    assert "no telling thread" in telling_threads("Full thread dump\n\nJNI global refs: 1\n")
