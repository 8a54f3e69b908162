"""``make classroom``: a real JupyterHub on 127.0.0.1 serving the course to a class.

    python -m deliverylab.classroom.hub start --students alice,bob,carol --password s3cret
    python -m deliverylab.classroom.hub sweep --state build/classroom   # after a crash

One Unix user per student (no Docker): the hub runs as root, each student logs in with
the workshop's shared password (JupyterHub's ``SharedPasswordAuthenticator``) if their
name is on the class list, and gets a single-user server running as their own Unix user
(:mod:`.hub_spawner`). Why one user each: the kernel, the brokers and the Spark driver a
chapter starts all run with that uid, so the home folder (0700) is private, no student
can signal another's processes, and stopping a server can kill *every* process of that
uid -- brokers, reapers, JVMs, whatever a student started -- which is the promise "a
server stopped or culled leaves none of its processes" (:func:`sweep`).

With ``--spawner docker`` (:mod:`.hub_docker`) each student's server is a container of
the lab image instead, on a network of the class; no Unix users, no cgroups of ours,
the jars inside the image; the same homes hold each student's ``labs/``.

What students share, read only: the venv, the library and the jars cache
(``DELIVERYLAB_CACHE``, a root-owned copy of the lab's cache with the class-data archives
recorded at its own path: a JVM maps an archive only on the classpath it was recorded
with). Each student formats brokers' storage into their own home (the shared storage
cache is not writable, see ``cluster.local.storage_cache``).

**Contract with the instructor's view** (``classroom/instructor.py``): student ``name``'s
home folder is ``<homes>/<prefix><name>`` (default ``/home/dlab-<name>``); the course is
copied to ``<home>/labs/`` at the first spawn, and a chapter run there writes its results
file to ``<home>/labs/results/<chapter>.json`` (the notebook's ``results_path``, relative
to its folder). :meth:`HubSettings.homes_glob` is that glob; ``<state>/settings.json``
lists the same homes under ``"student_homes"``.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import LabError, bad_value
from ..runtime.profile import PROFILES
from .hub_host import CHP, CLASS_CACHE, LIB, ROOT, install_proxy, prepare_cache, run
from .hub_host import prepare_runtime as _prepare_runtime
from .hub_host import reachable as reachable
from .plan import default_mem_limit_gb

#: The comment on every Unix user this module creates: :func:`remove_students` removes
#: only users that carry it.
GECOS = "deliverylab classroom student"
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")
#: How each student's server runs: as their own Unix user on this host (``local``), or
#: in a container of the lab image (``docker``, :mod:`.hub_docker`).
SPAWNERS = ("local", "docker")
LAB_IMAGE = os.environ.get("DELIVERYLAB_LAB_IMAGE", "deliverylab/lab:latest")


@dataclass
class HubSettings:
    """Everything the hub's config (:mod:`.hub_spawner`) reads, saved as JSON."""

    students: list[str]
    password: str
    state: str = str(ROOT / "build" / "classroom")
    port: int = 8000
    hub_port: int = 8081
    proxy_api_port: int = 8001  # configurable-http-proxy's REST API (the hub's default)
    homes: str = "/home"
    prefix: str = "dlab-"
    cache: str = str(CLASS_CACHE)
    labs: str = str(ROOT / "labs")
    venv_bin: str = str(Path(sys.executable).parent)
    pythonpath: str = str(LIB)  # a worktree's or checkout's library in every server
    chp: str = str(CHP)
    #: Optional per-student passwords (a class list ``name:password`` per line): a student
    #: then cannot log in as another, which the shared password alone allows.
    passwords: dict[str, str] = field(default_factory=dict)
    cull_timeout: int = 3600  # seconds idle before the culler stops a server
    cull_every: int = 300
    activity_interval: int = 60  # how often a server tells the hub it is in use
    concurrent_spawn_limit: int = 10
    #: Per-student caps (a cgroup each, :mod:`.hub_limits`; docker: the engine's). On
    #: by default, sized by the plan (:func:`.plan.default_mem_limit_gb`); None: no
    #: memory cap, which needs ``allow_uncapped``.
    mem_limit_gb: float | None = field(default_factory=default_mem_limit_gb)
    cpu_limit: float | None = None
    #: Start a class on a host where no cap can be set (or with no memory cap at all):
    #: one student's heavy chapter can then take every student's kernels down.
    allow_uncapped: bool = False
    #: The student profile every server runs with ($DELIVERYLAB_PROFILE,
    #: runtime/profile.py): 'light' caps the JVMs, measured in `make classroom-plan`.
    profile: str = "light"
    extra_env: dict[str, str] = field(default_factory=dict)
    #: ``local`` unless asked (see :data:`SPAWNERS`): the two differ in where students'
    #: data lives, what isolates them and what must be built first, so an engine that
    #: happens to answer does not switch a class from one to the other.
    spawner: str = "local"
    image: str = LAB_IMAGE  # docker: the lab image (docker/lab-image.sh)
    #: Where the hub listens; docker: the class network's gateway (set at start).
    hub_ip: str = "127.0.0.1"

    def __post_init__(self) -> None:
        if self.spawner not in SPAWNERS:
            raise bad_value("spawner", self.spawner, "one of " + ", ".join(SPAWNERS))
        if self.profile not in PROFILES:
            raise bad_value("profile", self.profile, "one of " + ", ".join(PROFILES))
        if not self.students:
            raise LabError("no students: give --students name,name,... (the class list)")
        for name in self.students:
            if not name or not set(name) <= NAME_CHARS or not name[0].isalpha():
                raise bad_value("student name", name, "lower-case letters, digits and "
                                "'-', starting with a letter")
            if len(self.prefix + name) > 32:
                raise bad_value("student name", name, f"at most {32 - len(self.prefix)} "
                                f"characters with the prefix {self.prefix!r}")
        for name, pw in self.passwords.items():
            if name not in self.students or len(pw) < 8:
                raise bad_value(f"class-list password of {name}", "*" * len(pw),
                                "a listed student's password of 8 characters or more")
        if self.mem_limit_gb is None and not self.allow_uncapped:
            raise LabError("no memory cap per student: give --mem-limit-gb GB (the plan's "
                           f"is {default_mem_limit_gb():g}) or --allow-uncapped")
        if self.mem_limit_gb is not None and not 0.0625 <= self.mem_limit_gb <= 1024:
            raise bad_value("mem_limit_gb", self.mem_limit_gb, "gigabytes, 0.0625 to 1024")
        if len(self.password) < 8 and set(self.passwords) != set(self.students):
            raise bad_value("password", "*" * len(self.password), "8 characters or more "
                            "(JupyterHub's SharedPasswordAuthenticator asks for 8)")

    def unix_name(self, student: str) -> str:
        return self.prefix + student

    def home(self, student: str) -> Path:
        return Path(self.homes) / self.unix_name(student)

    @property
    def network(self) -> str:
        """docker: the class's bridge network."""
        return f"{self.prefix}classroom"

    def homes_glob(self) -> str:
        """The instructor's view reads ``<this>/labs/results/*.json``."""
        return str(Path(self.homes) / f"{self.prefix}*")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def save(self) -> Path:
        state = Path(self.state)
        state.mkdir(parents=True, exist_ok=True)
        state.chmod(0o700)  # the cookie secret and the database live here
        path = state / "settings.json"
        record = {**asdict(self), "student_homes": [str(self.home(s)) for s in self.students]}
        path.write_text(json.dumps(record, indent=2) + "\n")
        path.chmod(0o600)
        (state / "jupyterhub_config.py").write_text(
            "# Written by deliverylab.classroom.hub: the settings are in settings.json.\n"
            "from deliverylab.classroom.hub_spawner import configure\n\n"
            f"configure(c, {str(path)!r})  # noqa: F821 -- c is JupyterHub's config\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> HubSettings:
        data = json.loads(Path(path).read_text())
        data.pop("student_homes", None)
        return cls(**data)


# --- Unix users ----------------------------------------------------------------------

def ensure_student(settings: HubSettings, student: str) -> pwd.struct_passwd:
    """The student's Unix user and private home (0700), with the course in ``labs/``.

    Created once; the course is copied only if ``labs/`` is absent, so a student's work
    survives a restart of their server."""
    name, home = settings.unix_name(student), settings.home(student)
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash",
             "--user-group", "--comment", GECOS, name])
        user = pwd.getpwnam(name)
    if user.pw_gecos.split(",")[0] != GECOS or user.pw_uid == 0:
        raise LabError(f"Unix user {name} exists but was not made by the classroom (its "
                       f"comment is {user.pw_gecos!r}): choose another prefix than "
                       f"{settings.prefix!r}")
    home.chmod(0o700)
    labs = home / "labs"
    if not labs.exists():
        shutil.copytree(settings.labs, labs, ignore=shutil.ignore_patterns(
            "results", ".ipynb_checkpoints", "__pycache__"))
        for path in [labs, *labs.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
    tmp = home / ".tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    os.chown(tmp, user.pw_uid, user.pw_gid)
    return user


def remove_students(settings: HubSettings) -> list[str]:
    """Sweep and delete the class's Unix users (only those this module created) and
    their homes. Returns the names removed."""
    gone = []
    for student in settings.students:
        name = settings.unix_name(student)
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        if user.pw_gecos.split(",")[0] != GECOS:
            raise LabError(f"Unix user {name} exists but was not made by the classroom "
                           f"(its comment is {user.pw_gecos!r}): not removed")
        sweep(user.pw_uid, what=f"{student}'s processes")
        remove_files_of(user.pw_uid)  # uids are reused: the next class must not own them
        run(["userdel", "--remove", name], ok=(0, 12))  # 12: home already gone
        shutil.rmtree(settings.home(student), ignore_errors=True)
        gone.append(name)
    return gone


#: The folders every user may write outside their home, where a student's JVMs,
#: Python and tools could leave files (``hsperfdata_<user>``, native library copies).
SHARED_TMP = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


def remove_files_of(uid: int, roots: tuple[Path, ...] = SHARED_TMP) -> list[Path]:
    """Remove every file and folder ``uid`` owns under ``roots`` (a folder of theirs
    with all it holds), never following a link; returns what was removed. Run once the
    uid's processes are swept: a deleted student's uid is the next class's, which would
    otherwise start out owning (and reading) these files."""
    if uid == 0:
        raise LabError("refusing to remove uid 0's files (root): a student is never root")
    removed: list[Path] = []

    def walk(folder: Path) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                st = entry.stat(follow_symlinks=False)
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == uid:
                try:
                    shutil.rmtree(path) if is_dir else path.unlink()
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise LabError(f"could not remove {path} of uid {uid}: {exc}") from exc
                removed.append(path)
            elif is_dir:
                walk(path)

    for root in roots:
        if root.is_dir():
            walk(root)
    return removed


# --- every process of a student ------------------------------------------------------

def processes_of(uid: int) -> list[int]:
    """Pids of the live (not zombie) processes whose real uid is ``uid``."""
    import psutil

    pids = []
    for proc in psutil.process_iter(["uids", "status"]):
        try:
            if proc.info["uids"].real == uid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                pids.append(proc.pid)
        except (psutil.Error, AttributeError):
            continue
    return pids


def sweep(uid: int, timeout: float = 30.0, what: str = "the student's processes") -> None:
    """SIGKILL every process of ``uid`` until none is left: the server's kernels (own
    sessions), their reapers (own sessions), brokers, JVMs, anything a student started,
    however it detached. Raises naming the survivors if some outlive ``timeout``."""
    if uid == 0:
        raise LabError("refusing to sweep uid 0 (root): a student is never root")
    deadline = time.monotonic() + timeout
    while pids := processes_of(uid):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise LabError(f"{what} (uid {uid}) still running after {timeout:.0f} s of "
                           f"SIGKILL: pids {pids}")
        time.sleep(0.1)


# --- the caps --------------------------------------------------------------------------

def check_caps(settings: HubSettings) -> str | None:
    """Can this host cap each student (local spawner)? Raises one line if not and the
    class did not allow it (``allow_uncapped``); returns why not if it did, else None."""
    from .hub_limits import why_not

    if settings.mem_limit_gb is None and settings.cpu_limit is None:
        return "no caps asked for"  # only with allow_uncapped (HubSettings checks)
    why = why_not()
    if why is not None and not settings.allow_uncapped:
        raise LabError(f"this host cannot cap each student's memory: {why}; refusing to "
                       "start the class (--allow-uncapped, make classroom "
                       "ALLOW_UNCAPPED=1: run it without caps)")
    return why


# --- the hub -------------------------------------------------------------------------

class Hub:
    """A running JupyterHub: started in its own process group under a reaper that, if
    this Python process dies, kills the hub and runs :func:`main`'s ``sweep``."""

    def __init__(self, settings: HubSettings, ephemeral: bool = False) -> None:
        self.settings = settings
        self.ephemeral = ephemeral  # a test's or bench's class: users removed even then
        self.proc: subprocess.Popen | None = None
        self.children = None
        #: What :func:`stop_everything` still found after the hub's own shutdown.
        self.swept: list[str] = []

    def start(self, timeout: float = 60.0) -> Hub:
        from ..process.children import Children

        s = self.settings
        if not Path(s.chp).exists():
            raise LabError(f"configurable-http-proxy not found at {s.chp}: run `make "
                           "classroom` (it installs it with npm into build/chp)")
        if s.spawner == "docker":
            from . import hub_docker

            hub_docker.prepare(s)  # the class network first: its gateway is the hub's ip
            for student in s.students:
                hub_docker.ensure_home(s, student)
        else:
            check_caps(s)
            s.venv_bin, env = _prepare_runtime(s.venv_bin)
            s.extra_env = {**s.extra_env, **env}
            for student in s.students:
                ensure_student(s, student)
        path = s.save()
        state = Path(s.state)
        self.children = Children()
        self.children.run_at_death([sys.executable, "-m", "deliverylab.classroom.hub",
                                    "sweep", "--state", str(state),
                                    *(["--remove-users"] if self.ephemeral else [])])
        env = {**os.environ, "PYTHONPATH": s.pythonpath + os.pathsep
               + os.environ.get("PYTHONPATH", ""),
               "PATH": str(Path(sys.executable).parent) + os.pathsep
               + os.environ.get("PATH", "")}
        self.proc = self.children.start(
            "jupyterhub", [sys.executable, "-m", "jupyterhub", "-f",
                           str(state / "jupyterhub_config.py")],
            state / "jupyterhub.log", env=env, cwd=state)
        self.log = state / "jupyterhub.log"
        deadline = time.monotonic() + timeout
        while True:
            self.children.check(self.proc)
            try:
                with urllib.request.urlopen(f"{s.url}/hub/api/", timeout=2) as rsp:
                    if rsp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise LabError(f"JupyterHub did not answer on {s.url}/hub/api/ within "
                               f"{timeout:.0f} s; its log: {self.log} (settings {path})")
            time.sleep(0.3)
        return self

    def stop(self, remove_users: bool = False) -> None:
        """Stop the hub (it stops every student's server, each swept), then the proxy;
        with ``remove_users`` delete the class's Unix users and homes."""
        if self.proc is not None and self.children is not None:
            self._stop_culler()
            self.children.stop(self.proc, timeout=60, sig=signal.SIGTERM)
        self.swept = stop_everything(self.settings, remove_users=remove_users)
        if self.children is not None:
            self.children.close()
            self.children = None

    def _stop_culler(self) -> None:
        """SIGKILL the idle culler first: it outlasts JupyterHub's SIGINT and SIGTERM
        (measured: the hub's shutdown waited ~29 s on it), and it holds no state."""
        import psutil

        try:
            children = psutil.Process(self.proc.pid).children()
        except psutil.Error:
            return
        for child in children:
            try:
                if "jupyterhub_idle_culler" in child.cmdline():
                    child.kill()
            except psutil.Error:
                continue

    def __enter__(self) -> Hub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_everything(settings: HubSettings, remove_users: bool = False) -> list[str]:
    """What must not outlive a hub: the proxy (JupyterHub starts it in its own session)
    and every student's processes (docker: the class's containers and network); with
    ``remove_users`` the users themselves (docker: the students' folders). Returns the
    containers and networks it had to remove (docker), for the caller to report."""
    pid_file = Path(settings.state) / "jupyterhub-proxy.pid"
    try:
        os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
    except (OSError, ValueError):
        pass
    pid_file.unlink(missing_ok=True)
    if settings.spawner == "docker":
        from . import hub_docker

        removed = hub_docker.remove_class(settings)
        if remove_users:
            hub_docker.remove_homes(settings)
        return removed
    from .hub_limits import remove_all

    if remove_users:
        remove_students(settings)
    for student in settings.students:
        try:
            sweep(pwd.getpwnam(settings.unix_name(student)).pw_uid,
                  what=f"{student}'s processes")
        except KeyError:
            pass
        remove_all(settings.unix_name(student))
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.classroom.hub",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start the hub and serve until Ctrl-C")
    start.add_argument("--students", required=True,
                       help="the class list, comma-separated, or a file: one `name` or "
                       "`name:password` a line")
    start.add_argument("--password", default=os.environ.get("CLASSROOM_PASSWORD", ""),
                       help="the workshop's shared password (or CLASSROOM_PASSWORD)")
    start.add_argument("--port", type=int, default=8000,
                       help="the hub's public port; the hub itself uses 8081 and the "
                       "proxy's API 8001 (as JupyterHub does)")
    start.add_argument("--cull-timeout", type=int, default=3600)
    start.add_argument("--mem-limit-gb", type=float, default=None,
                       help="memory cap per student (GB; default: the plan's, "
                       f"{default_mem_limit_gb():g} from the saved measurements)")
    start.add_argument("--allow-uncapped", action="store_true",
                       help="start the class even on a host where no cap can be set "
                       "(no writable cgroup): one student's heavy chapter can then take "
                       "every student's kernels down")
    start.add_argument("--cpu-limit", type=float, help="CPU cap per student (cores)")
    start.add_argument("--profile", default="light",
                       help="the student profile every server runs with (light, default)")
    start.add_argument("--spawner", default="local",
                       help="local (a Unix user per student, default) or docker (a "
                       "container of the lab image per student)")
    start.add_argument("--image", default=LAB_IMAGE, help="docker: the lab image")
    start.add_argument("--state", default=str(ROOT / "build" / "classroom"))
    start.add_argument("--remove-users", action="store_true",
                       help="delete the students' Unix users and homes when stopping")
    swept = sub.add_parser("sweep", help="stop what a crashed hub left (proxy, students)")
    swept.add_argument("--state", required=True)
    swept.add_argument("--remove-users", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "sweep":
        stop_everything(HubSettings.load(Path(args.state) / "settings.json"),
                        remove_users=args.remove_users)
        return 0
    entries = (Path(args.students).read_text().split() if Path(args.students).is_file()
               else args.students.split(","))
    listed = [e.strip().partition(":") for e in entries if e.strip()]
    try:
        settings = HubSettings(students=[n for n, _, _ in listed],
                               passwords={n: pw for n, _, pw in listed if pw},
                               password=args.password, port=args.port, state=args.state,
                               cull_timeout=args.cull_timeout,
                               mem_limit_gb=args.mem_limit_gb or default_mem_limit_gb(),
                               cpu_limit=args.cpu_limit, allow_uncapped=args.allow_uncapped,
                               profile=args.profile, spawner=args.spawner,
                               image=args.image,
                               cull_every=max(10, min(300, args.cull_timeout // 4)))
        install_proxy(Path(settings.chp))
        if settings.spawner == "local":  # docker: the jars are in the image
            prepare_cache(Path(settings.cache))
        hub = Hub(settings).start()
    except LabError as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 2
    how = (f"a container of {settings.image} each" if settings.spawner == "docker"
           else "a Unix user each")
    print(f"JupyterHub: {settings.url} -- students {', '.join(settings.students)} log in "
          f"with the shared password ({how}); homes {settings.homes_glob()}; Ctrl-C stops it",
          flush=True)
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)  # `kill` stops it as Ctrl-C does
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        while hub.proc is not None and hub.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second one must not cut it short
            signal.signal(sig, signal.SIG_IGN)
        print("stopping the hub, every server and every student process...", flush=True)
        hub.stop(remove_users=args.remove_users)
    return 0


if __name__ == "__main__":
    sys.exit(main())
