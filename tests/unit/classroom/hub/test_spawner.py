"""The config JupyterHub loads, without a hub: the local and the docker spawner's
settings, and the workshop authenticator."""

from __future__ import annotations

import asyncio
from pathlib import Path

from .class_settings import settings


def test_the_config_binds_localhost_with_the_culler_and_the_class_list(tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import spawner

    s = settings(tmp_path, cull_timeout=600, cull_every=60, port=18123, proxy_api_port=18124)
    c = Config()
    spawner.configure(c, str(s.save()))
    assert c.JupyterHub.ip == "127.0.0.1" and c.JupyterHub.hub_ip == "127.0.0.1"
    assert c.JupyterHub.port == 18123
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:18124"  # not every hub's 8001
    assert c.Authenticator.allowed_users == {"ann", "ben"}
    assert c.JupyterHub.spawner_class is spawner.StudentSpawner
    culler, board = c.JupyterHub.services
    assert "--timeout=600" in culler["command"] and "--cull-every=60" in culler["command"]
    assert board["name"] == "instructor"  # the dashboard (test_dashboard.py)
    role = c.JupyterHub.load_roles[0]
    assert role["services"] == ["idle-culler"] and "delete:servers" in role["scopes"]


def test_the_written_config_loads_the_spawner_by_its_path(tmp_path: Path):
    # JupyterHub runs the saved jupyterhub_config.py, which names this package's spawner
    # module by its dotted path: run it as JupyterHub does, with a Config as ``c``.
    from traitlets.config import Config

    from deliverylab.classroom.hub import spawner

    s = settings(tmp_path)
    s.save()
    c = Config()
    config = tmp_path / "state" / "jupyterhub_config.py"
    exec(compile(config.read_text(), str(config), "exec"), {"c": c})
    assert c.JupyterHub.spawner_class is spawner.StudentSpawner
    assert c.Authenticator.allowed_users == {"ann", "ben"}


def test_the_docker_config_limits_each_container_and_mounts_no_engine_socket(tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import docker, spawner

    s = settings(tmp_path, spawner="docker", image="lab:test", hub_ip="172.30.0.1",
                 mem_limit_gb=3.0, cpu_limit=1.5, prefix="dlt1-")
    c = Config()
    spawner.configure(c, str(s.save()))
    assert c.JupyterHub.spawner_class is spawner.ClassDockerSpawner
    assert c.JupyterHub.ip == "127.0.0.1"  # the public port; the hub on the bridge only
    assert c.JupyterHub.hub_ip == c.JupyterHub.hub_connect_ip == "172.30.0.1"
    d = c.DockerSpawner
    assert d.image == "lab:test" and d.pull_policy == "never"
    assert d.network_name == "dlt1-classroom" and d.use_internal_ip and d.remove
    assert d.mem_limit == 3 * 2**30 and d.extra_host_config == {"memswap_limit": 3 * 2**30,
                                                            "auto_remove": False}
    assert d.cpu_limit == 1.5
    assert d.cmd == ["jupyterhub-singleuser"]
    assert d.extra_create_kwargs == {"labels": {docker.LABEL: "dlt1-"}}
    assert "volumes" not in d  # each spawner mounts its student's labs/ only
    assert d.environment["DELIVERYLAB_PROFILE"] == "light"
    assert not any("docker.sock" in repr(v) for v in d.values())


def test_a_student_with_their_own_password_needs_it(tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import spawner

    c = Config()
    c.SharedPasswordAuthenticator.user_password = "workshop-pw"
    c.WorkshopAuthenticator.student_passwords = {"ann": "ann-secret"}
    c.Authenticator.allowed_users = {"ann", "ben"}
    auth = spawner.WorkshopAuthenticator(config=c)

    def login(name: str, password: str):
        return asyncio.run(auth.get_authenticated_user(
            None, {"username": name, "password": password}))

    assert login("ann", "ann-secret")["name"] == "ann"
    assert login("ann", "workshop-pw") is None  # not the shared one
    assert login("ben", "workshop-pw")["name"] == "ben"
    assert login("ben", "ann-secret") is None
    assert login("mallory", "workshop-pw") is None  # not on the class list
