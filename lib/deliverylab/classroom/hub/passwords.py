"""A credential per student for ``make classroom``: the class list, a generated password
for each student who has none, and the sheet the instructor prints and cuts into slips.

Why not one shared password (JupyterHub's ``SharedPasswordAuthenticator``): with it any
student can log in as any other listed student and open their server, notebooks and
brokers. The shared password stays, but only when asked for (``--shared-password`` or
``CLASSROOM_PASSWORD``); then students without a password of their own use it.

Generated passwords are read off paper and typed: 12 characters in three groups from an
alphabet without look-alikes (no 0/o, 1/l/i), about 59 bits from :mod:`secrets`. They are
kept in the hub's state folder (``settings.json``, 0600, root's) and reused when the
hub starts again for the same students, so a printed sheet stays valid for the class.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...errors import LabError, bad_value

#: What a generated password is made of: lower-case letters and digits a reader cannot
#: confuse on paper.
ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
GROUPS, GROUP_LEN = 3, 4
SHEET_NAME = "class-sheet.txt"


def generate() -> str:
    """One password: ``xxxx-xxxx-xxxx`` from :data:`ALPHABET`."""
    return "-".join("".join(secrets.choice(ALPHABET) for _ in range(GROUP_LEN))
                    for _ in range(GROUPS))


def read_class_list(source: str) -> list[tuple[str, str]]:
    """``(name, password)`` pairs from a class list: a file of one ``name`` or
    ``name:password`` a line (a line starting with ``#`` is a comment), or names
    separated by commas. A password is ``""`` when the list gives none."""
    path = Path(source)
    text = path.read_text() if path.is_file() else source.replace(",", "\n")
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, password = line.partition(":")
        if not name.strip():
            raise bad_value(f"class list line {number}", line, "name or name:password")
        out.append((name.strip(), password.strip()))
    names = [n for n, _ in out]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise bad_value("class list", ", ".join(twice), "each student once")
    return out


def previous(state: Path) -> dict[str, str]:
    """The passwords a hub with this state folder gave its students last time (empty if
    none): reused, so the sheet already printed stays right."""
    path = Path(state) / "settings.json"
    try:
        return dict(json.loads(path.read_text()).get("passwords", {}))
    except (OSError, ValueError, TypeError):
        return {}


def complete(students: Sequence[str], given: Mapping[str, str],
             earlier: Mapping[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """Every student's password: the class list's, else the one this state gave them
    before, else a new one. Returns the passwords and who got a new one."""
    earlier = earlier or {}
    out, new = {}, []
    for name in students:
        if given.get(name):
            out[name] = given[name]
        elif earlier.get(name):
            out[name] = earlier[name]
        else:
            out[name] = generate()
            new.append(name)
    return out, new


def sheet_text(url: str, passwords: Mapping[str, str], unix_prefix: str = "") -> str:
    """The printable sheet: a slip per student, cut along the dashed lines."""
    cut = "- " * 36 + "cut"
    slips = [cut]
    for name in sorted(passwords):
        slips += ["", "Delivery Guarantees Lab", f"  address:   {url}",
                  f"  user name: {name}", f"  password:  {passwords[name]}",
                  *([f"  (your files belong to the Unix user {unix_prefix}{name})"]
                    if unix_prefix else []), "", cut]
    return "\n".join(slips) + "\n"


def write_sheet(path: Path, text: str) -> Path:
    """Write ``text`` readable by its owner only (0600 from the first byte: the file is
    made with that mode, and an older sheet's mode is set again)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    return path


def class_credentials(source: str, shared: str, state: Path
                      ) -> tuple[list[str], dict[str, str], list[str]]:
    """The students, their own passwords and who got a new one, for ``hub start``.
    With a ``shared`` password only the class list's own passwords are kept (the others
    log in with the shared one); without, every student gets one."""
    listed = read_class_list(source)
    if not listed:
        raise LabError("no students: give --students name,name,... or a class list file")
    students = [n for n, _ in listed]
    given = {n: pw for n, pw in listed if pw}
    if shared:
        return students, given, []
    passwords, new = complete(students, given, previous(state))
    return students, passwords, new
