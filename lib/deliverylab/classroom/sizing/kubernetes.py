"""Beyond one host, on paper: a Zero to JupyterHub (Kubernetes) values file for the lab
image, generated from the plan's record so its limits cannot drift from the sizing.

    python -m deliverylab.classroom.sizing.kubernetes                 # print it
    python -m deliverylab.classroom.sizing.kubernetes --out docs/kubernetes-values.yaml
    python -m deliverylab.classroom.sizing.kubernetes --check docs/kubernetes-values.yaml

Each student gets a pod of the lab image (``docker/lab.Dockerfile``) running
``jupyterhub-singleuser`` as the image's user; the chapters' ``backend="auto"`` finds no
Docker engine in a pod and starts the brokers, Spark and Connect as local JVMs inside it,
as on the Docker path (:mod:`.hub.docker`). What comes from where:

* memory **limit**: the plan's cap (:func:`.plan.limit_gb` of the heaviest chapter's
  peak RSS); **guarantee** (the request the scheduler packs nodes by): the plan's memory
  per seat, so a node holds as many pods as the plan seats on a host of its size;
* CPU **limit**: the plan's; **guarantee**: the cores one chapter run uses on average;
* ``DELIVERYLAB_PROFILE=light``: the JVM caps the figures were measured under;
* the idle culler: the plan's timeout (every student has a seat) and the hub's period;
* a ``NetworkPolicy``: a student's pod admits only the hub and proxy, on the server's
  port, and reaches nothing but the hub and DNS: no pod reaches another's brokers,
  Connect workers, Spark UI or services (in a pod they are on its own network namespace
  already; the policy also closes what listens on all addresses, such as Spark's UI);
* no service-account token in the pod (a student gets no Kubernetes API credential);
* each student's ``labs/`` on a volume of its own, filled with the course once by an
  init container of the same image, so work outlives a culled pod.

No Kubernetes cluster was available where this was written: the file is checked by
building each student's pod with KubeSpawner itself (tests/unit/classroom/test_kubernetes.py),
not by installing the chart.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from ...errors import bad_value
from ..hub.docker import COURSE_IN_IMAGE, LAB_UID
from .plan import CULL_DEFAULT_S, RECORD, Figures, _round_up, limit_gb, recorded

#: The checked-in copy (the guide links it; a unit test regenerates and compares).
VALUES_FILE = Path(__file__).resolve().parents[4] / "docs" / "kubernetes-values.yaml"
#: jupyterhub-singleuser's port in a pod (KubeSpawner's default), the only one admitted.
SERVER_PORT = 8888
#: The hub's period of culling and the server's activity reports, as ``make classroom``'s.
CULL_EVERY_S = 300
ACTIVITY_INTERVAL_S = 60
#: Each student's ``labs/`` volume: the course, results, a student's own files.
STORAGE = "2Gi"
#: The volume's name in the pod, fixed so the init container can mount it too.
VOLUME = "volume-{user_server}"


def values(fig: Figures, image: str = "deliverylab/lab", tag: str = "latest"
           ) -> dict[str, Any]:
    """Zero to JupyterHub's values for the lab, sized by ``fig`` (the light profile's)."""
    cpu_limit = float(max(1.0, _round_up(fig.run_cpu_s / fig.run_wall_s, 0.5)))
    return {
        "singleuser": {
            "image": {"name": image, "tag": tag, "pullPolicy": "IfNotPresent"},
            "cmd": "jupyterhub-singleuser",
            "defaultUrl": "/lab/tree/labs",
            "startTimeout": 120,
            "uid": LAB_UID,
            "fsGid": LAB_UID,
            "memory": {"limit": f"{limit_gb(fig.peak_rss):g}G",
                       "guarantee": f"{_round_up(fig.marginal_pss / 2**30, 0.25):g}G"},
            "cpu": {"limit": cpu_limit,
                    "guarantee": round(_round_up(fig.run_cpu_s / fig.run_wall_s, 0.05), 2)},
            "extraEnv": {"DELIVERYLAB_PROFILE": fig.profile,
                         "JUPYTERHUB_ACTIVITY_INTERVAL": str(ACTIVITY_INTERVAL_S)},
            "extraLabels": {"hub.jupyter.org/network-access-hub": "true"},
            "storage": {
                "type": "dynamic", "capacity": STORAGE, "homeMountPath": COURSE_IN_IMAGE,
                "dynamic": {"pvcNameTemplate": "claim-{user_server}",
                            "volumeNameTemplate": VOLUME},
            },
            "initContainers": [{
                "name": "course",
                "image": f"{image}:{tag}",
                "command": ["sh", "-c", f"cp -a -n {COURSE_IN_IMAGE}/. /mnt/labs/"],
                "securityContext": {"runAsUser": LAB_UID, "runAsGroup": LAB_UID},
                "volumeMounts": [{"name": VOLUME, "mountPath": "/mnt/labs"}],
            }],
            "networkPolicy": {
                "enabled": True,
                "ingress": [],
                "allowedIngressPorts": [],
                "interNamespaceAccessLabels": "ignore",
                "egress": [],
                "egressAllowRules": {
                    "cloudMetadataServer": False, "dnsPortsCloudMetadataServer": False,
                    "dnsPortsKubeSystemNamespace": True, "dnsPortsPrivateIPs": True,
                    "nonPrivateIPs": False, "privateIPs": False},
            },
        },
        "hub": {"config": {"KubeSpawner": {"automount_service_account_token": False}}},
        "cull": {"enabled": True, "timeout": CULL_DEFAULT_S, "every": CULL_EVERY_S},
    }


def values_text(fig: Figures | None = None, image: str = "deliverylab/lab",
                tag: str = "latest") -> str:
    """The values as the checked-in file: a header saying where each figure comes from."""
    fig = fig or recorded("light")
    head = [
        "# Zero to JupyterHub values for the Delivery Guarantees Lab: one pod of the lab",
        "# image per student. GENERATED from the plan's record, do not edit by hand:",
        "#   python -m deliverylab.classroom.sizing.kubernetes --out docs/kubernetes-values.yaml",
        f"# Sized by {RECORD.name} ({fig.profile} profile): memory limit from "
        f"{fig.limit_chapter}'s peak RSS",
        f"# {fig.peak_rss / 2**30:.2f} GiB x 1.25; guarantee the memory per seat "
        f"{fig.marginal_pss / 2**30:.2f} GiB; CPU from a",
        f"# chapter run's {fig.run_cpu_s:g} CPU s in {fig.run_wall_s:g} s. "
        "Per class, not here: hub.config.JupyterHub",
        "# concurrent_spawn_limit and active_server_limit (make classroom-plan CORES=... "
        "MEMORY=...).",
        "# Checked by building each pod with KubeSpawner (no cluster was available to "
        "install it).",
    ]
    return "\n".join(head) + "\n" + yaml.safe_dump(values(fig, image, tag), sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deliverylab.classroom.sizing.kubernetes",
                                description="Zero to JupyterHub values from the plan.")
    p.add_argument("--out", type=Path, help="write the values there (default: print)")
    p.add_argument("--check", type=Path, metavar="FILE",
                   help="exit 1 if FILE is not what the plan's record gives")
    p.add_argument("--image", default="deliverylab/lab")
    p.add_argument("--tag", default="latest")
    args = p.parse_args(argv)
    if ":" in args.image:
        raise bad_value("--image", args.image, "a name without a tag (give --tag)")
    text = values_text(image=args.image, tag=args.tag)
    if args.check is not None:
        if not args.check.exists() or args.check.read_text() != text:
            print(f"{args.check} is not what {RECORD.name} gives: regenerate it with "
                  f"python -m deliverylab.classroom.sizing.kubernetes --out {args.check}",
                  file=sys.stderr)
            return 1
        return 0
    if args.out is not None:
        args.out.write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
