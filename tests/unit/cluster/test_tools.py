"""The tool launchers without a cluster: names, bootstrap filling, console scripts."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from deliverylab.cluster import tools
from deliverylab.errors import BadValue, LabError

ROOT = Path(__file__).resolve().parents[3]


def test_bootstrap_is_filled_only_where_the_tool_takes_one():
    assert tools.with_bootstrap("kafka-topics", ["--list"], "127.0.0.1:1") == [
        "--bootstrap-server", "127.0.0.1:1", "--list"]
    assert tools.with_bootstrap("kafka-topics", ["--bootstrap-server", "h:2", "--list"],
                                "127.0.0.1:1") == ["--bootstrap-server", "h:2", "--list"]
    assert tools.with_bootstrap("kafka-dump-log", ["--files", "a.log"], "127.0.0.1:1") == [
        "--files", "a.log"]


def test_command_line_is_a_shell_line_naming_the_tool():
    line = tools.command_line("kafka-transactions", "list", bootstrap="127.0.0.1:9")
    assert "kafka-transactions" in line
    assert line.endswith("--bootstrap-server 127.0.0.1:9 list")


def test_an_unknown_tool_is_named_with_the_choices():
    with pytest.raises(BadValue, match="tool='kafka-acls' is not accepted; expected one of "
                                       "kafka-topics"):
        tools.command_line("kafka-acls")


def test_every_console_script_points_at_a_launcher_for_its_own_tool():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == set(tools.TOOLS)
    for name, target in scripts.items():
        module, func = target.split(":")
        assert module == "deliverylab.cluster.tools"
        assert getattr(tools, func).__name__ == name.replace("-", "_")


def test_help_lists_the_tools(capsys):
    assert tools.main(["--help"]) == 0
    assert "kafka-consumer-groups" in capsys.readouterr().err


#: ``kafka-features describe`` as Kafka 4.1.1 prints it (two features).
FEATURES = ("Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
            "FinalizedVersionLevel: 0\tEpoch: 5\n"
            "Feature: transaction.version\tSupportedMinVersion: 0\t"
            "SupportedMaxVersion: 2\tFinalizedVersionLevel: 2\tEpoch: 5\n")


class _Features:
    """A cluster whose ``kafka-features describe`` answers :data:`FEATURES`."""

    def tool(self, name: str, *args: str) -> str:
        assert (name, args) == ("kafka-features", ("describe",))
        return FEATURES


def test_any_feature_level_is_read_by_its_exact_name():
    cluster = _Features()
    assert tools.feature_level(cluster, "kraft.version") == 0
    assert tools.feature_level(cluster, "transaction.version") == 2
    with pytest.raises(LabError, match="eligible.leader.replicas.version"):
        tools.feature_level(cluster, "eligible.leader.replicas.version")
    with pytest.raises(LabError):  # a prefix is not the feature
        tools.feature_level(cluster, "transaction")


def test_a_tool_s_command_line_imports_neither_the_cluster_nor_the_download(
        unneeded_imports):
    # python -m deliverylab.cluster.tools becomes the tool's JVM: cluster/__init__.py runs
    # first and loads Cluster on use; the jars are present, or fetched on first use.
    assert unneeded_imports("deliverylab.cluster.tools", (
        "deliverylab.cluster.cluster", "deliverylab.cluster.local",
        "deliverylab.runtime.download", "confluent_kafka", "psutil")) == []


def test_the_java_producer_keeps_its_temporary_files_out_of_the_shared_tmp(monkeypatch):
    """Chapter 09's Java producer: without the lab's temp options its JVM left
    /tmp/hsperfdata_<user> after each run (seen after a cold make test)."""
    from deliverylab.runtime.java import temp_opts

    monkeypatch.setattr(tools.classpaths, "classpath",
                        lambda component, fetch=True: [f"/jars/{component}"])
    monkeypatch.setattr(tools, "find_java", lambda: "java")
    cmd = tools.producer_perf_command("127.0.0.1:9092", "t", "java-1", 300, 40.0, 1000, 3000)
    assert cmd[0] == "java" and "-XX:-UsePerfData" in cmd
    assert set(temp_opts()) <= set(cmd[:cmd.index("-cp")])
    assert cmd[cmd.index("-cp") + 1] == "/jars/tools"
    assert "bootstrap.servers=127.0.0.1:9092" in cmd and "client.id=java-1" in cmd
    assert not [o for o in cmd if o.startswith("-XX:SharedArchiveFile")]  # as before
