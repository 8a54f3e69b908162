"""autocommit: argument checks (the crash itself runs against a real broker in chapter 02
and tests/integration/chapters/at_least_once/test_autocommit.py)."""

import pytest

from deliverylab.chapters.at_least_once import autocommit
from deliverylab.errors import LabError


class _NoCluster:
    def create_topic(self, *a, **k):  # pragma: no cover -- must not be reached
        raise AssertionError("a bad argument must be refused before any topic exists")


@pytest.mark.parametrize("kwargs", [dict(store="sometimes"), dict(batch=4, process=4),
                                    dict(process=0), dict(values=5, batch=10)])
def test_bad_arguments_are_refused_first(kwargs):
    with pytest.raises(LabError):
        autocommit.default_consumer_crash(_NoCluster(), "x", **kwargs)


def test_the_two_stores_differ_only_in_the_offset_store():
    assert autocommit.STORES["default"] == {}
    assert autocommit.STORES["after_processing"] == {"enable.auto.offset.store": False}
    assert "enable.auto.commit" not in autocommit.START


def test_values_are_named_as_the_checker_names_them():
    from deliverylab import values as V

    class Msg:
        def value(self):
            return V.encode("orders", 4)

    assert autocommit._vid(Msg()) == "orders:4"
