"""rebalance: the pause measurements on hand-written timelines (the run itself, against a
real broker, is chapter 02's section 4b)."""

import pytest

from deliverylab.chapters.consumer_groups import rebalance as R
from deliverylab.chapters.consumer_groups.rebalance import Event
from deliverylab.errors import LabError


def flow(member, partition, start, end, step=0.1):
    """Records of one partition handed to ``member`` every ``step`` s in [start, end)."""
    n = round((end - start) / step)
    return [Event(round(start + i * step, 3), member, "record", (partition,)) for i in range(n)]


def test_gaps_include_the_window_edges_and_skip_what_is_outside():
    assert R.gaps([0.5, 1.0, 3.0, 9.0], 1.0, 4.0) == [(1.0, 3.0), (3.0, 4.0)]
    assert R.gaps([], 2.0, 5.0) == [(2.0, 5.0)]
    assert R.longest(R.gaps([1.0, 1.5, 4.0], 0.0, 5.0)) == (1.5, 4.0)
    with pytest.raises(LabError):
        R.gaps([1.0], 5.0, 2.0)


def test_owners_follow_the_callbacks():
    tl = [Event(0.0, "a", "assigned", (0, 1)), Event(0.0, "b", "assigned", (2,)),
          Event(5.0, "a", "revoked", (0, 1)), Event(5.5, "a", "assigned", (0,)),
          Event(5.5, "b", "assigned", (1,)), Event(6.0, "c", "lost", (2,))]
    assert R.owners(tl, 1.0) == {0: "a", 1: "a", 2: "b"}
    assert R.owners(tl, 5.2) == {2: "b"}
    # a "lost" of a partition someone else holds does not take it away
    assert R.owners(tl, 7.0) == {0: "a", 1: "b", 2: "b"}


FLUSH = 0.2  # the modeled flush per revoked partition in these timelines


def eager_timeline():
    """Three members, two partitions each; c stalls at 3, is evicted at 9 (an eager
    rebalance: everything stops 9.0-9.8; a and b commit and flush their two partitions
    each, 9.0-9.4), wakes at 12 and rejoins (everything stops 12.4-13.0 while a and b
    flush three each, and the old assignment comes back)."""
    tl = [Event(0.0, "a", "assigned", (0, 1)), Event(0.0, "b", "assigned", (2, 3)),
          Event(0.0, "c", "assigned", (4, 5))]
    for m, ps in (("a", (0, 1)), ("b", (2, 3))):
        for p in ps:
            tl += flow(m, p, 0.0, 9.0) + flow(m, p, 9.8, 12.4)
            tl += flow(m, p, 13.0, 16.0)
    for p in (4, 5):
        tl += flow("c", p, 0.0, 3.0) + flow("c", p, 13.0, 16.0)
    # after the eviction a and b share c's partitions
    tl += flow("a", 4, 9.8, 12.4) + flow("b", 5, 9.8, 12.4)
    tl += [Event(3.0, "c", "stall"), Event(9.0, "a", "revoked", (0, 1)),
           Event(9.0, "b", "revoked", (2, 3)), Event(9.8, "a", "assigned", (0, 1, 4)),
           Event(9.8, "b", "assigned", (2, 3, 5)), Event(12.0, "c", "wake"),
           Event(12.0, "c", "lost", (4, 5)), Event(12.4, "a", "revoked", (0, 1, 4)),
           Event(12.4, "b", "revoked", (2, 3, 5)), Event(13.0, "a", "assigned", (0, 1)),
           Event(13.0, "b", "assigned", (2, 3)), Event(13.0, "c", "assigned", (4, 5))]
    tl += [Event(9.0 + 2 * FLUSH, m, "flushed", ps) for m, ps in (("a", (0, 1)), ("b", (2, 3)))]
    tl += [Event(12.4 + 3 * FLUSH, m, "flushed", ps)
           for m, ps in (("a", (0, 1, 4)), ("b", (2, 3, 5)))]
    return sorted(tl, key=lambda e: e.t)


def test_an_eager_stall_stops_the_whole_group_twice():
    tl = eager_timeline()
    eviction, rejoin = R.measure(tl, 6, "c", stall=3.0, wake=12.0, end=16.0)
    assert eviction.stop_the_world == pytest.approx((8.9, 9.8))
    assert rejoin.stop_the_world == pytest.approx((12.3, 13.0))
    # partitions 0-3 never changed owner, and still stopped with the others
    assert eviction.longest_kept == pytest.approx(0.9)
    assert rejoin.longest_kept == pytest.approx(0.7)
    assert [e.kind for e in rejoin.callbacks] == ["revoked", "revoked", "assigned", "assigned"]
    run = R.GroupRun("eager", {}, 6, "c", 3.0, 12.0, 16.0, tl)
    # c's partitions: idle from its stall (the window opens at 3.0) until a and b took
    # them over at 9.8
    assert run.staller_idle() == pytest.approx(9.8 - 3.0)
    assert run.owners(3.0) == R.owners(tl, 3.0)  # the figure of the run reads these
    assert "c" in run.owners(3.0).values() and "c" not in run.owners(12.0).values()
    # each window: both healthy members inside on_revoke for a flush of all they held
    assert eviction.revokes == {"a": [(9.0, 9.4, 2)], "b": [(9.0, 9.4, 2)]}
    assert eviction.shortest_revoke() == pytest.approx(2 * FLUSH)
    assert rejoin.shortest_revoke() == pytest.approx(3 * FLUSH)
    assert eviction.shortest_revoke() <= eviction.pause
    assert rejoin.longest_revoke() == pytest.approx(3 * FLUSH)
    assert rejoin.shortest_revoke() <= rejoin.pause
    assert run.row()["eviction: partitions the others flushed"] == 4
    assert run.row()["rejoin: partitions the others flushed"] == 6


def cooperative_timeline():
    """Same stall, incremental: a and b keep 0-3 flowing; c's partitions move to them at
    9.5 (only an assign: nothing flushed); at the rejoin each gives one back (12.5, a
    flush of one partition, during which it consumes nothing), and c gets them at 13.0."""
    tl = [Event(0.0, "a", "assigned", (0, 1)), Event(0.0, "b", "assigned", (2, 3)),
          Event(0.0, "c", "assigned", (4, 5)), Event(3.0, "c", "stall"),
          Event(9.5, "a", "assigned", (4,)), Event(9.5, "b", "assigned", (5,)),
          Event(12.0, "c", "wake"), Event(12.0, "c", "lost", (4, 5)),
          Event(12.5, "a", "revoked", (4,)), Event(12.5, "b", "revoked", (5,)),
          Event(12.5 + FLUSH, "a", "flushed", (4,)), Event(12.5 + FLUSH, "b", "flushed", (5,)),
          Event(13.0, "c", "assigned", (4, 5))]
    for m, ps in (("a", (0, 1)), ("b", (2, 3))):
        for p in ps:
            tl += flow(m, p, 0.0, 12.5) + flow(m, p, 12.5 + FLUSH, 16.0)
    tl += flow("c", 4, 0.0, 3.0) + flow("c", 5, 0.0, 3.0)
    tl += flow("a", 4, 9.5, 12.5) + flow("b", 5, 9.5, 12.5)
    tl += flow("c", 4, 13.0, 16.0) + flow("c", 5, 13.0, 16.0)
    return sorted(tl, key=lambda e: e.t)


def static_timeline():
    """Same stall, static members: a and b never stop; nobody reads c's partitions until
    it polls again at 12.0 and gets them back without a rebalance."""
    tl = [Event(0.0, "a", "assigned", (0, 1)), Event(0.0, "b", "assigned", (2, 3)),
          Event(0.0, "c", "assigned", (4, 5)), Event(3.0, "c", "stall"),
          Event(12.0, "c", "wake")]
    for m, ps in (("a", (0, 1)), ("b", (2, 3))):
        for p in ps:
            tl += flow(m, p, 0.0, 16.0)
    tl += flow("c", 4, 0.0, 3.0) + flow("c", 5, 0.0, 3.0)
    tl += flow("c", 4, 12.0, 16.0) + flow("c", 5, 12.0, 16.0)
    return sorted(tl, key=lambda e: e.t)


def test_a_cooperative_stall_stops_only_what_moves_and_flushes_only_that():
    eviction, rejoin = R.measure(cooperative_timeline(), 6, "c", stall=3.0, wake=12.0,
                                 end=16.0)
    assert eviction.pause == pytest.approx(0.1)
    assert eviction.revoked == 0 and eviction.shortest_revoke() == 0.0
    # at the rejoin both flush one partition at once: the group stops for about that
    assert rejoin.pause == pytest.approx(FLUSH + 0.1)  # 12.4 (last record) to 12.7
    assert rejoin.revoked == 2 and rejoin.shortest_revoke() == pytest.approx(FLUSH)
    assert eviction.longest_kept == pytest.approx(0.1)
    assert rejoin.longest_kept == pytest.approx(FLUSH + 0.1)  # 0-3 wait out the flush
    assert len(rejoin.callbacks) == 2  # a's and b's revokes; c's assign is the staller's
    assert eviction.revoked_kept == rejoin.revoked_kept == 0.0


def test_bad_windows_and_arguments_are_refused():
    with pytest.raises(LabError):
        R.measure([], 6, "c", stall=5.0, wake=4.0, end=8.0)

    class NoCluster:
        def create_topic(self, *a, **k):  # pragma: no cover -- must not be reached
            raise AssertionError("a bad argument must be refused before any topic exists")

    for kwargs in (dict(strategy="lazy"), dict(strategy="eager", stall_s=5.0),
                   dict(strategy="eager", members=1),
                   dict(strategy="eager", session_ms=9000),
                   dict(strategy="eager", flush_s=-0.1), dict(strategy="eager", flush_s=1.0)):
        with pytest.raises(LabError):
            R.stall_in_group(NoCluster(), "x", **kwargs)


def test_time_revoked_counts_only_from_revoke_to_the_assign_that_gives_it_back():
    tl = [Event(0.0, "a", "assigned", (0, 1)),
          Event(1.0, "a", "revoked", (0, 1)), Event(1.5, "a", "assigned", (0,)),
          Event(2.0, "b", "assigned", (1,)), Event(3.0, "a", "lost", (0,))]
    assert R.revoked_time(tl, [0, 1], 0.0, 10.0) == pytest.approx(0.5 + 1.0 + 7.0)
    assert R.revoked_time(tl, [1], 0.0, 10.0) == pytest.approx(1.0)
    assert R.revoked_time(tl, [0], 2.0, 10.0) == pytest.approx(7.0)  # before the window: no
    # b does not hold 0: its "lost" changes nothing
    assert R.revoked_time(tl + [Event(1.7, "b", "lost", (0,))], [0], 1.6, 2.9) == 0.0


def test_eager_revokes_kept_partitions_and_cooperative_does_not():
    eviction, rejoin = R.measure(eager_timeline(), 6, "c", stall=3.0, wake=12.0, end=16.0)
    # partitions 0-3, each revoked for 0.8 s at the eviction and 0.6 s at the rejoin
    assert eviction.revoked_kept == pytest.approx(4 * 0.8)
    assert rejoin.revoked_kept == pytest.approx(4 * 0.6)


def run(strategy, timeline, flush_s=FLUSH):
    return R.GroupRun(strategy, {}, 6, "c", 3.0, 12.0, 16.0, timeline, flush_s)


def test_revoke_spans_pair_each_revoke_with_its_members_next_flushed():
    tl = [Event(1.0, "a", "revoked", (0, 1)), Event(1.1, "b", "flushed", (2,)),
          Event(1.4, "a", "flushed", (0, 1)), Event(2.0, "b", "revoked", (2,)),
          Event(0.5, "a", "revoked", (3,)), Event(0.6, "a", "flushed", (3,))]
    # a's revoke at 0.5 began before the window; b's never returned: it runs to the end
    assert R.revoke_spans(tl, ["a", "b", "c"], 0.8, 3.0) == {
        "a": [(1.0, 1.4, 2)], "b": [(2.0, 3.0, 1)], "c": []}


def test_the_chapter_claims_hold_on_protocol_shaped_timelines():
    runs = [run("eager", eager_timeline()), run("cooperative", cooperative_timeline()),
            run("static", static_timeline())]
    assert R.claims(runs) == {claim: True for claim in R.claims(runs)}


def test_commits_count_the_revoke_callbacks_up_to_the_end():
    tl = eager_timeline() + [Event(9.01, "a", "committed", (0, 1), "0@90 1@90"),
                             Event(12.41, "b", "commit-failed", (2,), "REBALANCE_IN_PROGRESS"),
                             Event(16.5, "c", "commit-failed", (4, 5), "at close")]
    assert run("eager", sorted(tl, key=lambda e: e.t)).commits() == (1, 1)


def test_the_chapter_claims_fail_when_every_strategy_behaves_eagerly():
    """claims() judges runs, it does not assume them: three runs with eager's timeline
    under the three labels keep eager's claims and fail every cooperative and static one,
    the shorter pauses included."""
    runs = [run(s, eager_timeline()) for s in ("eager", "cooperative", "static")]
    held = R.claims(runs)
    eager_only = [c for c in held if c.startswith(("the stalled", "eager:"))]
    assert len(eager_only) == 2 and all(held[c] for c in eager_only)
    assert not any(v for c, v in held.items() if c not in eager_only)
    with pytest.raises(LabError, match="one run each of eager, cooperative and static"):
        R.claims(runs[:2])


def test_the_eager_bound_fails_when_the_group_consumed_during_a_revoke():
    """A timeline where the group resumed before the members' callbacks returned (no
    eager protocol does that) fails the eager claim: it is checked, not assumed."""
    tl = [e if e.kind != "flushed" else Event(e.t + 1.0, e.member, e.kind, e.partitions)
          for e in eager_timeline()]
    runs = [run("eager", tl), run("cooperative", cooperative_timeline()),
            run("static", static_timeline())]
    held = R.claims(runs)
    assert [c for c, v in held.items() if not v] == [c for c in held if c.startswith("eager:")]


def test_the_pause_claims_need_a_modeled_flush():
    runs = [run("eager", eager_timeline(), 0.0), run("cooperative", cooperative_timeline()),
            run("static", static_timeline())]
    with pytest.raises(LabError, match="flush_s"):
        R.claims(runs)


def test_margins_say_how_much_of_the_stall_the_eviction_left():
    runs = [run("eager", eager_timeline()), run("static", static_timeline())]
    # eager: the others' last callback of the eviction at 9.8, the stall from 3.0 to 12.0
    assert R.margins(runs) == {"eager: eviction over (s into the stall)": 6.8,
                               "eager: headroom to the wake (s)": 2.2}
    # an eviction that ended after the wake belongs to the rejoin's window: no headroom
    late = [e for e in eager_timeline() if not (9.0 <= e.t < 12.0 and e.member != "c")]
    assert R.margins([run("eager", late)]) == {}
