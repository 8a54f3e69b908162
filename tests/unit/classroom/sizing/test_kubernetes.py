"""The Zero to JupyterHub values, checked without a cluster: the checked-in file is what
the plan's record gives, and KubeSpawner itself builds each student's pod from it
(a throwaway kubeconfig that is never contacted), with the image, the plan's limits,
the light profile, and no service-account token; the NetworkPolicy the chart renders
from it admits no other pod to a student's brokers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kubespawner  # the dev extra (jupyterhub-kubespawner): a test, never a class's hub
import pytest
import yaml

from deliverylab.classroom.sizing import kubernetes, plan

VALUES = yaml.safe_load(kubernetes.VALUES_FILE.read_text())
GIB = 2**30


def test_the_checked_in_values_are_what_the_plans_record_gives(tmp_path: Path):
    assert kubernetes.VALUES_FILE.read_text() == kubernetes.values_text()
    assert kubernetes.main(["--check", str(kubernetes.VALUES_FILE)]) == 0
    stale = tmp_path / "values.yaml"
    stale.write_text(kubernetes.VALUES_FILE.read_text().replace("limit: 3G", "limit: 2G"))
    assert kubernetes.main(["--check", str(stale)]) == 1


def test_a_heavier_record_changes_the_limits_with_it():
    fig = plan.recorded("light")
    fig.peak_rss, fig.marginal_pss, fig.run_cpu_s = 3.5 * GIB, 2.1 * GIB, 70.0
    got = kubernetes.values(fig)["singleuser"]
    assert got["memory"] == {"limit": "4.5G", "guarantee": "2.25G"}  # 3.5 x 1.25 = 4.375
    assert got["cpu"] == {"limit": 1.5, "guarantee": 1.25}  # 70 CPU s in 56 s


# --- the pod, as KubeSpawner builds it --------------------------------------------------


def spawner_config(values: dict[str, Any]) -> Any:
    """The KubeSpawner configuration the chart makes of ``values`` (its
    files/hub/jupyterhub_config.py, read for this at the chart's commit 48ea50e: key by
    key, for the keys this file sets), then ``hub.config`` as given: the chart hands that
    to traitlets unchanged."""
    from traitlets.config import Config

    su, c = values["singleuser"], Config()
    ks = c.KubeSpawner
    ks.image = f"{su['image']['name']}:{su['image']['tag']}"
    ks.image_pull_policy = su["image"]["pullPolicy"]
    ks.cmd = [su["cmd"]]
    ks.default_url = su["defaultUrl"]
    ks.start_timeout = su["startTimeout"]
    ks.uid, ks.fs_gid = su["uid"], su["fsGid"]
    ks.mem_limit, ks.mem_guarantee = su["memory"]["limit"], su["memory"]["guarantee"]
    ks.cpu_limit, ks.cpu_guarantee = su["cpu"]["limit"], su["cpu"]["guarantee"]
    ks.environment = su["extraEnv"]
    ks.extra_labels = su["extraLabels"]
    ks.init_containers = su["initContainers"]
    storage = su["storage"]
    assert storage["type"] == "dynamic"
    volume = storage["dynamic"]["volumeNameTemplate"]
    ks.pvc_name_template = storage["dynamic"]["pvcNameTemplate"]
    ks.storage_capacity = storage["capacity"]
    ks.volumes = [{"name": volume, "persistentVolumeClaim": {"claimName": "{pvc_name}"}}]
    ks.volume_mounts = [{"name": volume, "mountPath": storage["homeMountPath"]}]
    for cls, traits in values["hub"]["config"].items():
        for name, value in traits.items():
            setattr(getattr(c, cls), name, value)
    return c


def build_pod(values: dict[str, Any], student: str, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``student``'s pod manifest from a real KubeSpawner (no API call is made), as the
    JSON it would send."""
    from jupyterhub.objects import Hub

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "none",
        "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "none", "user": {"token": "never-sent"}}],
        "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none",
                                                  "namespace": "lab"}}]}))
    # read when KubeSpawner loads its client's configuration (once per process): no
    # request is sent, the manifest is built before any would be
    monkeypatch.setattr("kubernetes_asyncio.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION",
                        str(kubeconfig))
    user = SimpleNamespace(name=student, escaped_name=student, id=1,
                           url=f"/user/{student}/", settings={})

    async def manifest() -> dict[str, Any]:
        from kubernetes_asyncio.client import ApiClient

        spawner = kubespawner.KubeSpawner(config=spawner_config(values), user=user,
                                          hub=Hub(), _mock=True)
        try:
            pod = await spawner.get_pod_manifest()
        finally:  # the client KubeSpawner made, never used
            await spawner.api.api_client.close()
        return ApiClient().sanitize_for_serialization(pod)  # what the API would be sent

    return asyncio.run(manifest())


@pytest.fixture
def pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return build_pod(VALUES, "alice", tmp_path, monkeypatch)


def test_the_pod_runs_the_lab_image_as_its_user(pod):
    server = pod["spec"]["containers"][0]
    assert server["image"] == "deliverylab/lab:latest"
    assert server["args"][0] == "jupyterhub-singleuser"
    assert pod["spec"]["securityContext"] == {"fsGroup": 1000}  # the volume's group
    assert server["securityContext"] == {"runAsUser": 1000,
                                         "allowPrivilegeEscalation": False}
    assert [p["containerPort"] for p in server["ports"]] == [kubernetes.SERVER_PORT]


def test_the_pod_is_limited_as_the_plan_says(pod):
    fig = plan.recorded("light")
    res = pod["spec"]["containers"][0]["resources"]
    assert res["limits"]["memory"] == plan.limit_gb(fig.peak_rss) * GIB == 3 * GIB
    assert res["requests"]["memory"] == 1.75 * GIB >= fig.marginal_pss  # a seat: 1.74 GiB
    assert res["limits"]["cpu"] == 1.0  # the plan's cpu_limit
    assert res["requests"]["cpu"] == 0.35 >= fig.run_cpu_s / fig.run_wall_s


def test_the_pod_runs_the_light_profile_with_no_engine_and_no_token(pod):
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["DELIVERYLAB_PROFILE"] == "light"
    assert env["JUPYTERHUB_ACTIVITY_INTERVAL"] == "60"
    assert env["MEM_LIMIT"] == str(3 * GIB)  # what the server shows as its limit
    assert "DOCKER_HOST" not in env  # the chapters start local JVMs in the pod
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in pod["spec"]
    mounts = [m["mountPath"] for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]
              for m in c.get("volumeMounts", [])]
    assert not [m for m in mounts if "serviceaccount" in m or "docker.sock" in m]
    assert not [v for v in pod["spec"]["volumes"] if "hostPath" in v]


def test_the_course_lands_on_the_students_own_volume(pod):
    assert pod["spec"]["volumes"] == [
        {"name": "volume-alice", "persistentVolumeClaim": {"claimName": "claim-alice"}}]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "volume-alice", "mountPath": "/home/lab/course/labs"}]
    (init,) = pod["spec"]["initContainers"]
    assert init["image"] == "deliverylab/lab:latest"
    assert init["volumeMounts"] == [{"name": "volume-alice", "mountPath": "/mnt/labs"}]
    assert init["command"][-1] == "cp -a -n /home/lab/course/labs/. /mnt/labs/"


def test_the_culler_stops_an_idle_server_after_the_plans_timeout():
    assert VALUES["cull"] == {"enabled": True, "timeout": plan.CULL_DEFAULT_S,
                              "every": kubernetes.CULL_EVERY_S}


# --- the NetworkPolicy ------------------------------------------------------------------

#: The label of the pods Zero to JupyterHub lets into a server (the hub, the proxy).
SINGLEUSER_ACCESS = "hub.jupyter.org/network-access-singleuser"


def admits(values: dict[str, Any], source: dict[str, str], port: int) -> bool:
    """Whether the chart's singleuser NetworkPolicy (templates/singleuser/netpol.yaml)
    admits a pod labelled ``source`` of the same namespace on ``port``: its rules are
    the server's port from pods with :data:`SINGLEUSER_ACCESS`, ``allowedIngressPorts``
    from anywhere, and ``ingress`` as given."""
    policy = values["singleuser"]["networkPolicy"]
    assert policy["enabled"] is True
    assert policy["ingress"] == [], "extra ingress rules: judge them here"
    if port in policy["allowedIngressPorts"]:
        return True
    return port == kubernetes.SERVER_PORT and source.get(SINGLEUSER_ACCESS) == "true"


def test_no_pod_reaches_another_students_brokers(tmp_path, monkeypatch):
    bob = build_pod(VALUES, "bob", tmp_path, monkeypatch)["metadata"]["labels"]
    assert bob.get(SINGLEUSER_ACCESS) is None  # a student's pod is no hub
    hub = {"component": "hub", SINGLEUSER_ACCESS: "true"}
    assert admits(VALUES, hub, kubernetes.SERVER_PORT)
    # every port a broker, proxy, Connect worker, Spark UI or service may take: none
    assert not [p for p in range(1, 65536) if admits(VALUES, bob, p)]
    assert not [p for p in range(1, 65536)
                if p != kubernetes.SERVER_PORT and admits(VALUES, hub, p)]


def test_a_students_pod_reaches_only_the_hub_and_dns():
    policy = VALUES["singleuser"]["networkPolicy"]
    rules = policy["egressAllowRules"]
    assert policy["egress"] == []
    assert rules["privateIPs"] is False  # no other pod, no node
    assert rules["nonPrivateIPs"] is False  # the image carries everything a chapter needs
    assert rules["cloudMetadataServer"] is False
    assert policy["interNamespaceAccessLabels"] == "ignore"
