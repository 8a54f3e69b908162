"""The four delivery modes: their settings, what each allows, and the claims table."""

from __future__ import annotations

import pytest

from deliverylab import checker as C
from deliverylab.errors import BadValue
from deliverylab.modes import (
    AT_LEAST_ONCE,
    AT_MOST_ONCE,
    CLAIMS,
    IDEMPOTENT,
    MODES,
    TRANSACTIONAL,
    DeliveryMode,
    claim_failures,
    mode,
)


def test_modes_are_found_by_any_spelling_and_a_bad_one_is_named():
    assert mode("at-least-once") is AT_LEAST_ONCE is mode("AT_LEAST_ONCE")
    assert mode(IDEMPOTENT) is IDEMPOTENT
    with pytest.raises(BadValue, match="EXACTLY_ONCE.*one of AT_MOST_ONCE"):
        mode("EXACTLY_ONCE")
    assert list(MODES) == ["AT_MOST_ONCE", "AT_LEAST_ONCE", "IDEMPOTENT", "TRANSACTIONAL"]


def test_each_mode_allows_what_its_settings_can_produce():
    # acks=0 loses writes; a retry without idempotence writes twice; neither is allowed
    # once the broker deduplicates and the transaction commits the offsets.
    assert C.LOST in AT_MOST_ONCE.allowed
    assert C.DUPLICATES in AT_LEAST_ONCE.allowed and C.LOST not in AT_LEAST_ONCE.allowed
    assert C.DUPLICATES not in TRANSACTIONAL.allowed and C.LOST not in TRANSACTIONAL.allowed
    assert TRANSACTIONAL.transactional and not IDEMPOTENT.transactional
    assert IDEMPOTENT.producer["enable.idempotence"] is True


def test_a_commit_strategy_outside_the_three_is_refused():
    with pytest.raises(BadValue, match="sometimes"):
        DeliveryMode("X", {}, {}, "sometimes", frozenset(), "claim")


def test_claim_failures_name_the_cell_and_what_it_contradicted():
    cell = next(iter(CLAIMS))
    rules = CLAIMS[cell]
    held = {name: (1 if rule == "always" else 0) for name, rule in rules.items()}
    assert claim_failures(*cell, held, valid=True) == []
    broken = {name: (0 if rule == "always" else 3) for name, rule in rules.items()}
    found = claim_failures(*cell, broken, valid=False, violations=["lost"])
    assert found[0] == f"{cell[0]}/{cell[1]}: outside what {cell[0]} allows: lost"
    assert len(found) == 1 + len(rules)
    assert claim_failures("AT_LEAST_ONCE", "no_such_fault", {}, valid=True) == [
        "AT_LEAST_ONCE/no_such_fault: no claim is written for this cell (modes.CLAIMS)"]
