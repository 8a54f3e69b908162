"""A kit whose module is also a child's ``__main__`` loads its names on first use
(process.lazy), so ``python -m`` finds that module not yet imported by its own package."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deliverylab.chapters import at_least_once, transactions

#: Each lazy kit -> its module that a child process runs as ``__main__``.
CHILD_MODULES = {"deliverylab.chapters.at_least_once": "autocommit",
                 "deliverylab.chapters.transactions": "zombie"}


@pytest.mark.parametrize("kit", sorted(CHILD_MODULES))
def test_importing_the_kit_does_not_import_its_child_module(kit: str):
    child = f"{kit}.{CHILD_MODULES[kit]}"
    code = (f"import sys, {kit}\n"
            f"assert {child!r} not in sys.modules, 'imported with its package'\n"
            f"{kit}.__all__\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_name_loads_from_its_module_on_first_use():
    from deliverylab.chapters.transactions.zombie import GENERATION_FENCING, live_zombie

    assert transactions.live_zombie is live_zombie
    assert transactions.GENERATION_FENCING is GENERATION_FENCING
    assert "lost_ack_duplicate" in at_least_once.__all__


def test_a_name_the_kit_lacks_is_one_line_listing_what_it_has():
    with pytest.raises(AttributeError, match=r"deliverylab\.chapters\.transactions has no "
                                             r"'ghost'; it has GENERATION_FENCING, "
                                             r"LiveZombie, live_zombie$"):
        transactions.ghost  # noqa: B018 -- the attribute access is the test
