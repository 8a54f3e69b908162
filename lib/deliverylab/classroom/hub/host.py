"""What a host prepares for ``make classroom`` (:mod:`.hub`), before any student: the
class's read-only jars cache, configurable-http-proxy, and a Python every student can
run. Apart from the hub's settings and users so that each stays one role."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ...errors import LabError

ROOT = Path(__file__).resolve().parents[4]
LIB = Path(__file__).resolve().parents[3]
#: configurable-http-proxy, installed by ``make classroom`` (npm) into build/.
CHP = ROOT / "build" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
CHP_VERSION = "5.3.0"
#: The class's shared, read-only jars cache (the lab's own sits in root's home, which
#: students cannot enter).
CLASS_CACHE = Path(os.environ.get("CLASS_CACHE", "/var/cache/deliverylab-class"))


def run(argv: list[str], ok: tuple[int, ...] = (0,)) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if proc.returncode not in ok:
        raise LabError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")


# --- the shared cache ----------------------------------------------------------------

def prepare_cache(cache: Path = CLASS_CACHE) -> Path:
    """The class's jars cache at ``cache``: jars hard-linked (or copied) from the lab's
    own cache, checked and completed by the installer, the class-data archives recorded
    at this path, everything root-owned and world-readable, nothing world-writable."""
    from ...runtime import jars

    own = jars.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    if own.resolve() != cache.resolve() and own.is_dir():
        for src in own.rglob("*.jar"):
            dst = cache / src.relative_to(own)
            if not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copy2(src, dst)
    share_spark_archive(own, cache)
    env = {**os.environ, "DELIVERYLAB_CACHE": str(cache),
           "PYTHONPATH": str(LIB) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "deliverylab.classroom.setup.install"], env=env,
                          capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise LabError(f"filling the class cache {cache} failed:\n{proc.stdout[-1500:]}"
                       f"\n{proc.stderr[-1500:]}")
    for path in [cache, *cache.rglob("*")]:
        mode = path.lstat().st_mode & 0o777
        if not path.is_symlink():
            path.chmod((mode | 0o555 if path.is_dir() else mode | 0o444) & ~0o022)
    for parent in cache.parents:  # students must be able to walk to it
        if not os.stat(parent).st_mode & 0o001:
            raise LabError(f"the class cache {cache} sits under {parent}, which other "
                           "users cannot enter: choose another CLASS_CACHE")
    return cache


def share_spark_archive(own: Path, cache: Path) -> Path | None:
    """Hand the class cache the lab's own Spark class archive for this venv, if it has
    one: hard-linked (or copied), under the same name, so the installer finds it there
    and records none (~150 MB and ~40 s of a driver start and stop, on every new venv).

    The two are interchangeable: the archive's name is keyed by the Java and the venv's
    pyspark jars (``spark.session.class_archive``), and the driver's classpath is those
    jars in either cache -- the connector comes through ``spark.jars``, whose classes a
    dynamic archive does not hold. The broker's and the tools' archives are not shared:
    their classpath is the cache's own jars folder. The result: the linked file, or None
    when the lab's cache has none (the installer then records one as before)."""
    from ...spark import session as spark_session

    name = spark_session.class_archive().name  # the same in every cache of this venv
    src, dst = own / name, cache / name
    if dst.exists() or not src.is_file() or own.resolve() == cache.resolve():
        return None
    partial = dst.with_suffix(".sharing")  # never a half-copied archive under its name
    partial.unlink(missing_ok=True)
    try:
        os.link(src, partial)
    except OSError:
        shutil.copy2(src, partial)
    partial.rename(dst)
    # As a recording would: other venvs' archives unused for a week go (~150 MB each).
    spark_session._prune_archives(dst)
    return dst


def install_proxy(chp: Path = CHP) -> Path:
    """configurable-http-proxy from npm into build/chp (``make classroom`` does the same)."""
    if not chp.exists():
        prefix = chp.parents[2]
        proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix",
                               str(prefix), f"configurable-http-proxy@{CHP_VERSION}"],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not chp.exists():
            raise LabError(f"npm could not install configurable-http-proxy into {prefix} "
                           f"(exit {proc.returncode}): {proc.stderr[-800:]}")
    return chp


# --- the Python students run -----------------------------------------------------------

#: Where a class runtime is made when students cannot reach the venv's interpreter.
RUNTIME = Path(os.environ.get("CLASS_RUNTIME", "/opt/deliverylab-class"))


def reachable(path: Path) -> bool:
    """Can any user walk to and read/run ``path`` (every folder above it o+x)?"""
    path = path.resolve()
    return all(os.stat(p).st_mode & 0o001 for p in path.parents) \
        and bool(os.stat(path).st_mode & 0o004)


def prepare_runtime(venv_bin: str, runtime: Path = RUNTIME
                    ) -> tuple[str, dict[str, str]]:
    """The venv's Python made runnable by students: the ``bin`` folder to run it from
    and the environment it needs (for the settings' ``venv_bin`` and ``extra_env``).

    A venv's ``python`` is a link to the interpreter it was made from; when that sits in
    a home students cannot enter (pyenv's, in root's home, on this machine), the
    interpreter's installation is hard-linked (copied if another disk) to
    ``<runtime>/python`` and a venv made from it at ``<runtime>/venv`` that adds the
    lab venv's packages (a ``.pth`` calling ``site.addsitedir``): nothing is downloaded
    and the packages are the lab's own. ``LD_LIBRARY_PATH`` finds the copy's libpython
    (pyenv's builds name their own lib folder as the run path); ``JUPYTER_*`` the lab
    venv's server extensions and JupyterLab."""
    venv_python = Path(venv_bin) / "python"
    if reachable(venv_python):
        return venv_bin, {}
    probe = subprocess.run([str(venv_python), "-c", "import sys, site; print(sys.base_prefix);"
                            " print(site.getsitepackages()[0]); print(sys.version_info[1]);"
                            " print(sys.prefix)"],
                           capture_output=True, text=True, timeout=60, check=True)
    base, site_packages, minor, prefix = probe.stdout.split()
    copy, venv = runtime / "python", runtime / "venv"
    runtime.mkdir(parents=True, exist_ok=True)
    runtime.chmod(0o755)
    if not copy.exists():
        run(["cp", "-al", base, str(copy)], ok=(0, 1))
        if not (copy / "bin" / f"python3.{minor}").exists():
            shutil.rmtree(copy, ignore_errors=True)
            run(["cp", "-a", base, str(copy)])
    # Jupyter finds its server extensions' config, JupyterLab and the labextensions under
    # sys.prefix: point it at the lab venv's.
    env = {"LD_LIBRARY_PATH": str(copy / "lib"),
           "JUPYTER_PATH": f"{prefix}/share/jupyter",
           "JUPYTER_CONFIG_PATH": f"{prefix}/etc/jupyter",
           "JUPYTERLAB_DIR": f"{prefix}/share/jupyter/lab"}
    if not (venv / "bin" / "python").exists():
        proc = subprocess.run([str(copy / "bin" / f"python3.{minor}"), "-m", "venv",
                               "--without-pip", str(venv)], capture_output=True, text=True,
                              timeout=120, env={**os.environ, **env})
        if proc.returncode != 0:
            raise LabError(f"could not make the class venv {venv}: {proc.stderr[-500:]}")
    pth = venv / "lib" / f"python3.{minor}" / "site-packages" / "deliverylab-lab-venv.pth"
    pth.write_text(f"import site; site.addsitedir({site_packages!r})\n")
    if not reachable(venv / "bin" / "python"):
        raise LabError(f"the class venv {venv} is not reachable by other users: choose "
                       "another CLASS_RUNTIME")
    return str(venv / "bin"), env
