"""The fault registry: every fault the lab can inject, named once.

A button, the papermill ``faults`` parameter, ``Scenario(fault=...)``, ``make matrix``
and the tests all take their fault names from :data:`FAULTS` and nowhere else (the
shape of Kafka's system tests: one ``failures`` dict, every test parametrised over its
keys). A name that is not a key here is refused with one line listing the keys.

Faults come in two kinds, and both are entries:

- ``cluster`` faults are done *to* the cluster by the :class:`~deliverylab.nemesis.Nemesis`
  (a method of the same name): kill or pause a broker, lose an ack in the proxy...
- ``client`` faults are done to a client by the client's own code at a chosen moment:
  a consumer that crashes between its processing and its commit, one that stalls past
  ``max.poll.interval.ms``, a producer that dies mid-transaction, a restarted
  producer, the zombie an old instance becomes.

Either way the fault lands in the History as an operation of kind ``fault`` (Jepsen's
nemesis ops), so one timeline holds what the clients were told and what was done to
them. ``scenario`` marks the faults a :class:`~deliverylab.scenario.Scenario` (and so
the anomaly matrix) can run under every mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import checker as C
from .errors import bad_value


@dataclass(frozen=True)
class Fault:
    """One fault: its name, the button text, what it does, who does it.

    ``permits`` names anomalies the fault causes *by design*, whatever the delivery
    mode promises, for modes without transactional fencing: a restarted producer that
    re-sends its values is an application writing twice, which no producer setting
    can prevent (chapter 03's lesson). The matrix judges a run against the mode's
    ``allowed`` set plus these.
    """

    name: str
    label: str
    help: str
    kind: str  # "cluster" (the Nemesis does it) or "client" (the client does it)
    scenario: bool = False
    permits: frozenset[str] = frozenset()
    #: What the fault needs beyond a running cluster: "docker" for what only containers
    #: can do (cut a broker's network); a button on other clusters says why it is absent.
    needs: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("cluster", "client"):
            raise bad_value("kind", self.kind, "'cluster' or 'client'")


def _faults(*items: Fault) -> dict[str, Fault]:
    return {f.name: f for f in items}


#: Every fault, in the order menus list them.
FAULTS: dict[str, Fault] = _faults(
    Fault("lose_ack", "Lose an ack",
          "the broker appends the write, its acknowledgement never reaches the client, "
          "which retries", "cluster", scenario=True),
    Fault("kill_leader", "Kill leader",
          "SIGKILL the broker that leads the partition now (no flush)", "cluster"),
    Fault("pause_followers", "Pause followers",
          "SIGSTOP the brokers that copy the partition: the leader alone acknowledges",
          "cluster"),
    Fault("isolate_leader", "Isolate and kill leader",
          "pause the followers, let the leader acknowledge writes nobody copies, kill it, "
          "resume the followers: a follower takes over without those writes",
          "cluster", scenario=True),
    Fault("pause_broker", "Pause broker",
          "SIGSTOP one broker (the partition's leader in a scenario) for a moment", "cluster",
          scenario=True),
    Fault("kill_broker", "Kill broker", "SIGKILL one broker", "cluster"),
    Fault("resume_broker", "Resume broker", "SIGCONT a paused broker", "cluster"),
    Fault("restart_broker", "Restart broker", "stop one broker and start it again",
          "cluster"),
    Fault("partition_client", "Cut clients off",
          "the broker's proxy lets nothing through: clients see silence, replication "
          "goes on", "cluster"),
    Fault("partition_leader", "Partition leader",
          "cut the partition's leader off from the other brokers (its container leaves "
          "their network); clients still reach it", "cluster", needs="docker"),
    Fault("delay_client", "Delay clients",
          "delay every byte between clients and one broker", "cluster"),
    Fault("hold_request", "Hold a request",
          "the proxy keeps the next request of one api (Produce, EndTxn...) from the "
          "broker: the client hears nothing and gives up after its timeout", "cluster"),
    Fault("release_held", "Release held request",
          "the held request goes on, late, on its client's own connection (a retry that "
          "arrives after the broker moved on)", "cluster"),
    Fault("inject_held", "Inject held request",
          "the held request reaches the broker on a connection of its own, after its "
          "client gave up and moved on (a stale request surfacing)", "cluster"),
    Fault("heal", "Heal", "resume paused brokers, restart dead ones, heal the proxies",
          "cluster"),
    Fault("kill_worker", "Kill worker",
          "SIGKILL the Kafka Connect worker that runs the task: records already in Kafka, "
          "their source offsets not yet", "cluster"),
    Fault("stop_worker", "Stop worker",
          "SIGTERM the Kafka Connect worker that runs the task: a graceful stop, which "
          "commits the task's offsets first", "cluster"),
    Fault("pause_worker", "Pause worker",
          "SIGSTOP the Kafka Connect worker that runs the task: the group hands the task "
          "to another worker, the frozen one still believes it runs it", "cluster"),
    Fault("resume_worker", "Resume worker",
          "SIGCONT paused Kafka Connect workers: a zombie task carries on", "cluster"),
    Fault("restart_worker", "Restart worker",
          "start dead Kafka Connect workers again", "cluster"),
    Fault("restart_task", "Restart task",
          "restart the connector's task through Connect's REST API (graceful)", "cluster"),
    Fault("crash_producer", "Crash producer",
          "the producer dies after some values (mid-transaction when transactional); a "
          "new instance writes the rest", "client", scenario=True),
    # Two faults, two lessons (chapter 03 vs 04): a *restart* is a new instance, a new
    # producer id, that writes again what the old one wrote; a *zombie* is the old
    # instance itself coming back, which only a transactional.id (or KIP-447's group
    # generation) can fence.
    Fault("restart_producer", "Restart producer",
          "the producer is replaced mid-way (a crash and restart, a redeploy): a new "
          "instance, with a new producer id, writes every value again, then the stalled "
          "first instance comes back (with a transactional.id, the new instance's "
          "init_transactions has fenced it)",
          "client", scenario=True, permits=frozenset({C.DUPLICATES, C.PIPELINE_EXTRA})),
    Fault("zombie_producer", "Zombie producer",
          "the old instance of a replaced transactional producer (crashed or paused "
          "mid-transaction) comes back and writes: its epoch or its group generation is "
          "stale, and the write is refused (chapters 04, 07)", "client"),
    Fault("crash_consumer", "Crash consumer",
          "the processing stage dies between processing and committing, in the order its "
          "mode does them (before the commit for at-least-once, after it for at-most-once,"
          " inside the open transaction for exactly-once)", "client", scenario=True),
    Fault("stall_consumer", "Stall consumer",
          "the processing stage stalls past max.poll.interval.ms after writing a batch: "
          "the group gives its partitions to another instance", "client"),
    Fault("crash_query", "Crash the Spark query",
          "the Spark pipeline's driver raises right after its sink wrote a batch, before "
          "Spark writes commits/N: the restarted query runs that batch again", "client"),
    Fault("kill_driver", "SIGKILL the Spark driver",
          "the Spark pipeline runs in its own driver process, which is SIGKILLed right "
          "after its sink wrote a batch, before commits/N", "client"),
    Fault("kill_after_db", "Kill after DB write",
          "SIGKILL a service instance after its database write, before its offset commit: "
          "another instance redoes the batch (chapter 06)", "client"),
    Fault("kill_after_http", "Kill after HTTP call",
          "SIGKILL a service instance right after its HTTP call, before its commits "
          "(chapter 06)", "client"),
    Fault("restart_instance", "Kill and restart",
          "SIGKILL the only service instance after its database write and start it again:"
          " it redoes its batch (chapter 06)", "client"),
    Fault("kill_relay", "Kill the outbox relay",
          "SIGKILL the transactional outbox's relay after it published records and before "
          "it marked them published: the restarted relay publishes them again (chapter 06)",
          "client"),
)

#: The faults a Scenario runs (the anomaly matrix's columns), after "none".
SCENARIO_FAULTS: tuple[str, ...] = tuple(n for n, f in FAULTS.items() if f.scenario)


def fault(name: str) -> Fault:
    """The registry entry for ``name``; one clear line for a name that is not one."""
    if not isinstance(name, str) or name not in FAULTS:
        raise bad_value("fault", name, "one of " + ", ".join(FAULTS))
    return FAULTS[name]


def check_names(names: Iterable[str], accepted: Iterable[str] | None = None,
                what: str = "fault") -> list[str]:
    """Validate a list of fault names (a papermill schedule): each must be a registry
    key, and among ``accepted`` (a chapter's buttons) when given. Returns the list."""
    names = list(names)
    allowed = list(accepted) if accepted is not None else list(FAULTS)
    for name in names:
        if name not in allowed:
            raise bad_value(what, name, "one of " + ", ".join(allowed))
        fault(name)
    return names


def allowed(mode_allowed: frozenset[str], name: str, transactional: bool) -> frozenset[str]:
    """What a run of a mode under fault ``name`` may show: the mode's own ``allowed`` set
    plus what the fault causes by design (``permits``), unless transactions fence it."""
    if name == "none":
        return mode_allowed
    extra = frozenset() if transactional else fault(name).permits
    return frozenset(mode_allowed) | extra
