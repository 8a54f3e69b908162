"""``make classroom``: a real JupyterHub on 127.0.0.1 serving the course to a class.

    python -m deliverylab.classroom.hub start --students alice,bob,carol  # a sheet of passwords
    python -m deliverylab.classroom.hub sweep --state build/classroom   # after a crash

The command line of the hub (:mod:`.hub`): ``start`` reads the class list and its
credentials (:mod:`.passwords`), makes the settings (:mod:`.settings`), installs the
proxy and the class's jars cache (:mod:`.host`), starts the hub and serves until Ctrl-C
or SIGTERM, then stops it with every server and student process; ``sweep`` stops what a
crashed hub left, from its saved settings (the hub's reaper runs it).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from ...errors import LabError, command_failed
from ..sizing.plan import default_mem_limit_gb
from .host import ROOT, install_proxy, prepare_cache
from .hub import Hub, stop_everything
from .network import NETWORKS
from .passwords import SHEET_NAME, class_credentials, sheet_text, write_sheet
from .settings import LAB_IMAGE, HubSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.classroom.hub",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start the hub and serve until Ctrl-C")
    start.add_argument("--students", required=True,
                       help="the class list, comma-separated, or a file: one `name` or "
                       "`name:password` a line; a student without one gets a generated "
                       "password, on the sheet <state>/class-sheet.txt (0600)")
    start.add_argument("--shared-password", "--password", dest="password",
                       default=os.environ.get("CLASSROOM_PASSWORD", ""),
                       help="instead of generated passwords: one password for every "
                       "student without their own (or CLASSROOM_PASSWORD); any student "
                       "can then log in as another")
    start.add_argument("--instructors", default="instructor",
                       help="who may open the live dashboard at /services/instructor/ "
                       "(comma-separated or a file, as --students; default: one user "
                       "'instructor'); their passwords go on the sheet like the students'")
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
    start.add_argument("--network", default="isolated", choices=NETWORKS,
                       help="local: a network namespace per student (isolated, default) "
                       "or the host's, where students reach each other's ports (shared)")
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
    try:
        students, passwords, new = class_credentials(
            args.students, args.password, Path(args.state))
        instructors, theirs, new_too = class_credentials(
            args.instructors, args.password, Path(args.state))
        new += new_too
        settings = HubSettings(students=students, passwords={**passwords, **theirs},
                               instructors=instructors,
                               password=args.password, port=args.port, state=args.state,
                               cull_timeout=args.cull_timeout,
                               mem_limit_gb=args.mem_limit_gb or default_mem_limit_gb(),
                               cpu_limit=args.cpu_limit, allow_uncapped=args.allow_uncapped,
                               profile=args.profile, spawner=args.spawner,
                               student_network=args.network,
                               image=args.image,
                               cull_every=max(10, min(300, args.cull_timeout // 4)))
        sheet = None
        if not settings.password:  # a credential each: the sheet the instructor prints
            sheet = write_sheet(
                Path(settings.state) / SHEET_NAME,
                sheet_text(settings.url, settings.passwords))
        install_proxy(Path(settings.chp))
        if settings.spawner == "local":  # docker: the jars are in the image
            prepare_cache(Path(settings.cache))
        hub = Hub(settings).start()
    except LabError as exc:
        return command_failed("classroom", exc, 2)
    how = (f"a container of {settings.image} each" if settings.spawner == "docker"
           else "a Unix user each")
    login = (f"with their own passwords: print {sheet} (0600; new for "
             f"{', '.join(new) or 'nobody'})" if sheet else "with the shared password")
    print(f"JupyterHub: {settings.url} -- students {', '.join(settings.students)} log in "
          f"{login} ({how}); homes {settings.homes_glob()}; the instructor's dashboard: "
          f"{settings.url}/services/instructor/ ({', '.join(settings.instructors)}); "
          "Ctrl-C stops it", flush=True)
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
