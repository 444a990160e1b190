"""Partitions finishing in any order are handed on in partition order."""

from __future__ import annotations

from tracegrade.distributed.in_order import InOrder


def test_numbers_are_handed_on_once_every_one_before_them_is_ready() -> None:
    order = InOrder([0, 1, 2, 5, 6])
    assert order.ready(2) == []
    assert order.ready(0) == [0]
    assert order.ready(6) == []
    assert order.ready(1) == [1, 2]
    assert order.rest() == [5, 6]
    assert order.rest() == []


def test_a_number_ready_twice_is_handed_on_once() -> None:
    order = InOrder(range(3))
    assert order.ready(0) == [0]
    assert order.ready(0) == []
    assert order.ready(1) == [1]
