"""Downloading the pinned jars: HTTPS, checksums, atomic renames, one clear error.

Why this is its own module: set-up is where a student's first hour goes wrong (a
Ctrl-C, a Wi-Fi that drops, a corporate mirror), so the rules are written once here:

* the repository is Maven Central, or the mirror the user's Maven settings name for it
  (``~/.m2/settings.xml``, then the global settings), or ``$DELIVERYLAB_MAVEN_REPO``
  (an ``https://`` URL, a loopback ``http://`` URL, or a ``file://`` folder laid out
  like a Maven repository: an offline bundle is one);
* each file is written to a hidden ``.part`` file beside its final name, its sha256
  compared with the pin, then renamed: an interrupted download never leaves a file a
  later run would trust, and a cached file whose checksum differs is fetched again;
* a jar gets the mode the user's umask asks for (``mkstemp`` makes its file 0600, and
  a cache of 0600 jars copied into an image is unreadable by the broker's user there);
  a cached jar with another mode is given it back on the next check;
* with no repository reachable, the error names the missing files and the two ways
  out (the network once, or ``make setup BUNDLE=...``).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from ..errors import JarsUnavailable
from .jars import CENTRAL, COMPONENTS, FIX, Jar, component_dir, pinned, problems, with_bases

REPO_ENV = "DELIVERYLAB_MAVEN_REPO"
TIMEOUT = 60.0  # seconds without a byte before a download counts as failed
CHUNK = 1 << 16
MB = 1024**2


def settings_files() -> list[Path]:
    """Maven's settings, user's first (they win), then the global ones Maven reads."""
    files = [Path.home() / ".m2" / "settings.xml"]
    for env in ("MAVEN_HOME", "M2_HOME"):
        if os.environ.get(env):
            files.append(Path(os.environ[env]) / "conf" / "settings.xml")
    files += [Path("/etc/maven/settings.xml"), Path("/usr/share/maven/conf/settings.xml")]
    return [f for f in files if f.is_file()]


def _mirrors_central(mirror_of: str) -> bool:
    """Does a ``<mirrorOf>`` pattern cover Maven Central (id ``central``, https)?"""
    pats = [p.strip() for p in mirror_of.split(",") if p.strip()]
    if "!central" in pats:
        return False
    return any(p in ("*", "central", "external:*", "external:https:*") for p in pats)


def mirror_from_settings(path: Path) -> str | None:
    """The URL of the first unblocked mirror of Central in one settings file."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return None

    def text(elem: ET.Element, tag: str) -> str:
        for child in elem:
            if child.tag.rsplit("}", 1)[-1] == tag:
                return (child.text or "").strip()
        return ""

    for elem in root.iter():
        if elem.tag.rsplit("}", 1)[-1] != "mirror":
            continue
        if text(elem, "blocked").lower() == "true":
            continue
        if _mirrors_central(text(elem, "mirrorOf")) and text(elem, "url"):
            return text(elem, "url").rstrip("/")
    return None


def repository() -> tuple[str, str]:
    """(base URL, where it came from) of the repository jars are downloaded from."""
    if os.environ.get(REPO_ENV):
        return os.environ[REPO_ENV].rstrip("/"), f"${REPO_ENV}"
    for settings in settings_files():
        url = mirror_from_settings(settings)
        if url:
            return url, f"mirror in {settings}"
    return CENTRAL, "Maven Central"


def _check_scheme(url: str) -> None:
    parts = urllib.parse.urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme == "https" or parts.scheme == "file" or (
            parts.scheme == "http" and loopback):
        return
    raise JarsUnavailable(f"repository {url!r} is not accepted: jars are only downloaded "
                          "over https:// (or from a file:// folder); fix the URL in your "
                          f"Maven settings or ${REPO_ENV}")


def umask() -> int:
    """This process's umask, read without changing it where Linux says it (``Umask:``
    in /proc/self/status); elsewhere set and put back at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a new regular file gets from ``open()`` under this umask."""
    return 0o666 & ~umask()


def fix_modes(folder: Path) -> list[Path]:
    """Give the jars in ``folder`` the umask's mode where it differs (a cache written by
    an earlier version holds 0600 jars). Returns the files changed."""
    mode, changed = file_mode(), []
    for jar in folder.glob("*.jar"):
        try:
            if jar.stat().st_mode & 0o777 != mode:
                jar.chmod(mode)
                changed.append(jar)
        except OSError:
            pass  # not ours to change (a shared read-only cache): reading still works
    return changed


def fetch_one(url: str, dest: Path, jar: Jar,
              progress: Callable[[int], None] = lambda n: None) -> None:
    """Download ``url`` to ``dest`` if and only if it matches the pin (size and sha256).

    The bytes go to a hidden ``.part`` file in the same folder, renamed over ``dest``
    only once verified; on any failure (or a Ctrl-C) the partial file is removed.
    """
    fd, part_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    part = Path(part_name)
    try:
        digest, got = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
            while chunk := resp.read(CHUNK):
                out.write(chunk)
                digest.update(chunk)
                got += len(chunk)
                progress(len(chunk))
        if got < jar.size:  # the connection ended early (some servers say nothing else)
            raise ConnectionError(f"the connection closed after {got} of {jar.size} bytes")
        if got != jar.size or digest.hexdigest() != jar.sha256:
            raise JarsUnavailable(
                f"{jar.name} from {url} does not match its pin ({got} bytes, sha256 "
                f"{digest.hexdigest()[:12]}..., pinned {jar.size} bytes, "
                f"{jar.sha256[:12]}...): the repository served another file; try again "
                f"or use another repository (${REPO_ENV})")
        os.chmod(part, file_mode())  # mkstemp's 0600 is for the half-written file only
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def _clean_stale_parts(folder: Path, older_than: float = 3600) -> None:
    """Remove ``.part`` files a killed set-up left (not a running one's: they are new)."""
    now = time.time()
    for part in folder.glob(".*.part"):
        try:
            if now - part.stat().st_mtime > older_than:
                part.unlink()
        except OSError:
            pass


def fill(components: list[str], deep: bool = True, quiet: bool = False,
         repo: str | None = None) -> list[Path]:
    """Make the cache hold every pinned jar of ``components`` (and their bases).

    ``deep`` re-checks the sha256 of files already there (a corrupt one is fetched
    again); otherwise sizes are compared. ``repo`` overrides :func:`repository` (an
    offline bundle passes its own folder). Returns the files downloaded.
    """
    wanted: list[str] = []
    for comp in components:
        wanted += [c for c in with_bases(comp) if c not in wanted]
    todo: list[tuple[Jar, Path]] = []
    for comp in wanted:
        folder = component_dir(comp)
        folder.mkdir(parents=True, exist_ok=True)
        _clean_stale_parts(folder)
        fix_modes(folder)
        bad = {p.split(" ", 1)[0] for p in problems(comp, deep=deep)}
        todo += [(j, folder / j.name) for j in pinned(comp) if j.name in bad]
    if not todo:
        return []
    base, origin = (repo.rstrip("/"), "given") if repo else repository()
    _check_scheme(base)
    total = sum(j.size for j, _ in todo)
    done = 0
    # Progress on stdout: it is news, not an error (in a notebook, a first use that
    # downloads would otherwise print red boxes the student cannot act on).
    say = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    say(f"downloading {len(todo)} jar(s), {total / MB:.1f} MB, from {base} ({origin})")
    fetched = []
    for i, (jar, dest) in enumerate(todo, 1):
        url = f"{base}/{jar.path}"
        try:
            fetch_one(url, dest, jar)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            missing = [j.name for j, d in todo[i - 1:] if not d.exists()]
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more"
                                              if len(missing) > 3 else "")
            reason = getattr(exc, "reason", exc)
            raise JarsUnavailable(
                f"cannot download {jar.name} from {base} ({reason}); still missing: "
                f"{shown} (in {dest.parent}); {FIX}") from exc
        done += jar.size
        fetched.append(dest)
        say(f"  [{i}/{len(todo)}] {jar.name} {jar.size / MB:.1f} MB "
            f"({done / MB:.1f} of {total / MB:.1f} MB)")
    return fetched


def sizes() -> dict[str, int]:
    """Bytes each component downloads from an empty cache (bases counted once each)."""
    return {c: sum(j.size for j in pinned(c)) for c in COMPONENTS}
