"""The ``producer:seq`` value encoding: one writer, one parser, one decoder."""

from __future__ import annotations

import pytest

from deliverylab.values import ValueId, decode, encode, key, parse


def test_a_value_round_trips_through_its_encoding_and_its_text():
    raw = encode("shop:eu", 17, payload_size=5)
    vid = decode(raw)
    assert vid == ValueId("shop:eu", 17) and str(vid) == "shop:eu:17"
    assert parse(str(vid)) == vid  # the last colon splits: a producer may hold colons
    assert parse(vid) is vid
    assert b'"payload":"xxxxx"' in raw and key("shop:eu") == b"shop:eu"


def test_values_order_by_producer_then_sequence():
    assert sorted([ValueId("b", 1), ValueId("a", 10), ValueId("a", 2)]) == [
        ValueId("a", 2), ValueId("a", 10), ValueId("b", 1)]


@pytest.mark.parametrize("text", ["", "p", ":3", "p:", "p:x", "p:1.5"])
def test_parse_refuses_what_is_not_producer_colon_seq(text):
    with pytest.raises(ValueError, match="expected 'producer:seq'"):
        parse(text)


@pytest.mark.parametrize("raw", [b"", b"hello", b'{"producer": "p"}', b"[1, 2]", None])
def test_decode_refuses_what_the_lab_did_not_write(raw):
    with pytest.raises(ValueError, match="not a lab value"):
        decode(raw)
