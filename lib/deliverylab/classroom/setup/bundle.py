"""The offline bundle: everything ``make setup`` downloads, in one folder to copy.

Why: a classroom's network is the least reliable part of a workshop. Thirty students
fetching pyspark (400 MB) and the Kafka jars at 9:00 is the failure everyone has seen.
An instructor runs ``make bundle`` once, at home, copies the folder to a USB stick or a
share, and each student runs ``make setup BUNDLE=/path/to/bundle``: no network at all.

    python -m deliverylab.classroom.setup.bundle make DEST [--platform TAG ...] [--with-image]
    python -m deliverylab.classroom.setup.bundle install SRC  # jars into the cache (make does it)

What the folder holds:

* ``wheels/`` -- the lab's package and every dependency (dev tools included) as wheels
  for this machine's platform, plus pip/setuptools/wheel so that the editable install
  and a pip upgrade work with ``--no-index``. ``--platform`` adds binary wheels for
  other machines (e.g. ``macosx_11_0_arm64``, ``win_amd64``, ``manylinux2014_aarch64``);
  pure-Python ones (pyspark included, built here) serve every platform.
* ``maven2/`` -- every pinned jar (``resources/jars.lock.json``: broker, Spark's Kafka
  connector, tools, Connect, JDBC drivers) in a Maven repository's layout, so that
  ``install`` is the ordinary download from a ``file://`` repository, checksums
  included (the class archive is left out: it belongs to one JVM, and ``make setup``
  records a new one offline).
* ``images/`` (``--with-image``) -- the broker image (``docker save``), for the
  Docker path; ``install --images`` loads it.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from ...errors import LabError, command
from ...runtime import jars
from ...runtime.download import fill

ROOT = Path(__file__).resolve().parents[4]
#: What a ``--no-index`` install needs besides the requirements themselves.
TOOLING = ["pip", "setuptools>=68", "wheel"]


class BundleError(LabError):
    """The bundle could not be made or installed (the message says which step)."""


def requirements(pyproject: Path = ROOT / "pyproject.toml", extras: tuple[str, ...] = ("dev",)
                 ) -> list[str]:
    """The lab's dependencies as pip requirement strings, read from ``pyproject.toml``.

    An extra that names the project's own other extras (``dev`` pulls in
    ``deliverylab[classroom]``) is expanded here: pip cannot download the project itself
    from an index, offline or not."""
    project = tomllib.loads(pyproject.read_text())["project"]
    optional = project.get("optional-dependencies", {})
    own = re.compile(rf"^{re.escape(project['name'])}\s*\[([^\]]*)\]\s*$")
    reqs = list(project.get("dependencies", []))
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        if extra not in optional:
            raise BundleError(f"pyproject.toml has no extra {extra!r} (it has: "
                              f"{', '.join(optional)})")
        for req in optional[extra]:
            match = own.match(req.split("#")[0].strip())
            if match:
                todo += [e.strip() for e in match.group(1).split(",") if e.strip()]
            elif req not in reqs:
                reqs.append(req)
    return reqs


def _pip(*args: str, timeout: float = 3600) -> None:
    cmd = [sys.executable, "-m", "pip", *args]
    print("$ " + " ".join(cmd[2:]), flush=True)
    proc = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise BundleError(f"`pip {args[0]}` failed: " + " | ".join(tail))


def make(dest: Path, platforms: list[str] | None = None, python_version: str | None = None,
         with_image: bool = False) -> Path:
    """Fill ``dest`` (created if needed); safe to re-run (pip skips what is there)."""
    t0 = time.monotonic()
    wheels = dest / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    reqs = requirements()
    with tempfile.TemporaryDirectory() as tmp:
        req_file = Path(tmp) / "requirements.txt"
        req_file.write_text("\n".join([*reqs, *TOOLING]) + "\n")
        # This platform: wheels for everything, sdists (pyspark) built into wheels.
        _pip("wheel", "--quiet", "--wheel-dir", str(wheels), "--find-links", str(wheels),
             "-r", str(req_file))
        _pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(ROOT))
        for tag in platforms or []:
            # Other platforms: binary wheels only; pure-Python ones found among ours.
            _pip("download", "--quiet", "--only-binary=:all:", "--platform", tag,
                 "--python-version", python_version or f"{sys.version_info[0]}."
                 f"{sys.version_info[1]}", "--implementation", "cp",
                 "--find-links", str(wheels), "--dest", str(wheels), "-r", str(req_file))
    copied = _copy_jars(dest / "maven2")
    image = _save_image(dest / "images") if with_image else None
    manifest = {
        "made": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(), "platform": platform.platform(),
        "machine": platform.machine(), "extra_platforms": platforms or [],
        "kafka": jars.KAFKA_VERSION, "cache": copied, "image": image,
        "wheels": sorted(p.name for p in wheels.glob("*.whl")),
    }
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (dest / "README.txt").write_text(
        "Delivery Guarantees Lab - offline bundle\n\n"
        "On each student machine, in a copy of the course repository:\n"
        f"    make setup BUNDLE={dest.resolve()}\n"
        "    (or: export DELIVERYLAB_BUNDLE=<this folder>; make lab)\n"
        "No network is used. Wheels are for "
        f"{platform.machine()} / Python {platform.python_version()}"
        + (f" and {', '.join(platforms)}" if platforms else "") + ".\n")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"bundle: {dest} ({size / 1024**2:.0f} MB, {len(manifest['wheels'])} wheels, "
          f"{len(copied)} jars) in {time.monotonic() - t0:.0f}s")
    return dest


def _copy_jars(dest: Path) -> list[str]:
    """Every pinned jar, checked (downloaded if needed), into a Maven-layout folder."""
    fill(jars.locked_components(), deep=True)
    copied = []
    for comp in jars.locked_components():
        for jar in jars.pinned(comp):
            target = dest / jar.path
            if not (target.exists() and target.stat().st_size == jar.size):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(jars.component_dir(comp) / jar.name, target)
            copied.append(jar.path)
    return copied


def _save_image(dest: Path) -> str:
    from ...cluster import docker as dk

    image = dk.resolve_image()
    if not dk.image_present(image):
        raise BundleError(f"--with-image: {image} is not on the Docker engine (pull or build "
                          "it first: docker/broker-image.sh)")
    dest.mkdir(parents=True, exist_ok=True)
    dk._docker("save", "-o", str(dest / "broker.tar"), image, timeout=1800)
    (dest / "broker.name").write_text(image + "\n")
    return image


def install(src: Path, images: bool = False) -> list[str]:
    """Put the bundle's jars into this machine's cache (and load its image if asked).

    The same code path as an online set-up, with the bundle as the repository: each
    file is checked against this lab's pins, so a bundle from another lab version is
    noticed (the missing or different file is named) rather than half-used.
    """
    if not (src / "manifest.json").exists():
        raise BundleError(f"{src} is not a lab bundle (no manifest.json): make one with "
                          "`make bundle` on a machine that is online")
    if not (src / "maven2").is_dir():
        raise BundleError(f"{src} was made by an older version of the lab (no maven2/ "
                          "folder): make it again with `make bundle`")
    got = fill(jars.locked_components(), deep=True, repo=(src / "maven2").resolve().as_uri())
    installed = [p.name for p in got]
    print(f"bundle: {len(installed)} jar(s) installed into {jars.cache_dir()}"
          + ("" if installed else " (all already there)"))
    tar = src / "images" / "broker.tar"
    if images and tar.exists():
        from ...cluster import docker as dk

        dk._docker("load", "-i", str(tar), timeout=1800)
        print(f"bundle: loaded {(src / 'images' / 'broker.name').read_text().strip()}")
    return installed


@command("bundle failed")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.classroom.setup.bundle")
    sub = parser.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="gather wheels and jars into a folder")
    mk.add_argument("dest", type=Path)
    mk.add_argument("--platform", action="append", default=[],
                    help="also binary wheels for this pip platform tag (repeatable)")
    mk.add_argument("--python-version", help="for --platform wheels (default: this one)")
    mk.add_argument("--with-image", action="store_true", help="docker save the broker image")
    ins = sub.add_parser("install", help="copy a bundle's jars into the cache")
    ins.add_argument("src", type=Path)
    ins.add_argument("--images", action="store_true", help="docker load the broker image")
    args = parser.parse_args(argv)
    if args.cmd == "make":
        make(args.dest, args.platform, args.python_version, args.with_image)
    else:
        install(args.src, args.images)
    return 0


if __name__ == "__main__":
    sys.exit(main())
