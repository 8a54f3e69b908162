"""The class's network plan without making it: each student's addresses, names short
enough for the kernel, a class of its own per prefix, and a bad setting refused."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from deliverylab.classroom.hub.network import ClassNetwork
from deliverylab.classroom.hub.settings import HubSettings
from deliverylab.errors import LabError


def test_each_student_gets_a_slash_30_of_the_classs_net_and_a_short_interface():
    net = ClassNetwork("dlab-", ["ann", "ben", "cat"])
    got = [net.student(n) for n in net.students]
    assert [g.namespace for g in got] == ["dlab-ann", "dlab-ben", "dlab-cat"]
    for i, g in enumerate(got):
        host, mine = ipaddress.ip_address(g.host_address), ipaddress.ip_address(g.address)
        assert host in net.net and mine == host + 1 and int(host) % 4 == 1
        assert int(host) - int(net.net.network_address) == 4 * i + 1
        assert len(g.host_if) <= 15  # IFNAMSIZ
    assert len({g.host_if for g in got}) == 3
    assert net.hub_address.endswith(".255.254") and ipaddress.ip_address(
        net.hub_address) in net.net
    assert ClassNetwork("dlab-", ["ann"]).student("ann") == got[0]  # the same each time
    assert str(ClassNetwork("dlt1a2b-", ["ann"]).net).startswith("10.")


def test_a_bad_network_setting_is_refused_in_one_line(tmp_path: Path):
    with pytest.raises(LabError, match="network='open' is not accepted.*isolated, shared"):
        HubSettings(students=["ann"], password="workshop-pw", state=str(tmp_path),
                    student_network="open")
    assert HubSettings(students=["ann"], password="workshop-pw",
                       state=str(tmp_path)).student_network == "isolated"
