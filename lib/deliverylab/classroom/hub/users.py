"""Each student of a local class (``--spawner local``) as a Unix user of their own: made
with a private home holding the course, swept of every process, removed with every file
of their uid.

Why one user each: the kernel, the brokers and the Spark driver a chapter starts all run
with that uid, so the home folder (0700) is private, no student can signal another's
processes, and stopping a server can kill *every* process of that uid -- brokers,
reapers, JVMs, whatever a student started -- which is the promise "a server stopped or
culled leaves none of its processes" (:func:`sweep`).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import time
from pathlib import Path

from ...errors import LabError
from .host import run
from .settings import HubSettings

#: The comment on every Unix user this module creates: :func:`remove_students` removes
#: only users that carry it.
GECOS = "deliverylab classroom student"


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
