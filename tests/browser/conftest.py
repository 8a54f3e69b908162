"""Fixtures for browser tests: Debian's Chromium, a real JupyterLab, a Playwright page.

Everything these fixtures start is stopped by process id when the test ends, pass or
fail: JupyterLab, every kernel it launched, and whatever those kernels started (Kafka
brokers, the Spark JVM, the broker reaper). Kernels are launched by jupyter_client in
their own sessions, so killing JupyterLab's process group would miss them; the fixture
therefore remembers the whole process tree while it is alive.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from deliverylab.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent  # the project's venv: its jupyter, its kernel
INSTALL_CHROMIUM = ROOT / "scripts" / "install-chromium.sh"

#: Chromium flags for a headless, offline, root-run CI machine: no sandbox (root),
#: no GPU, and none of the background traffic a fresh profile would start.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]

#: JupyterLab user settings for the test: no news or update toasts over the notebook.
#: Windowing off: every cell stays in the DOM, so a test can find a cell by its text
#: without scrolling it into existence first.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
        {"windowingMode": "none"},
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The course book's test reads the chapters the chapter tests executed: it runs
    after every other selected test (pytest would otherwise take tests/browser/ before
    tests/labs/, when a run selects the chapters too), and last in its lane of the solo
    part."""
    book = [i for i in items
            if Path(i.path).name == "test_book.py" and Path(i.path).parent == HERE]
    if book:
        items[:] = [i for i in items if i not in book] + book


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    """Path of Debian's Chromium, installed by scripts/install-chromium.sh if missing."""
    proc = subprocess.run(["bash", str(INSTALL_CHROMIUM)], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"could not install Chromium (scripts/install-chromium.sh exited "
                    f"{proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout.strip().splitlines()[-1]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class JupyterLab:
    """A running JupyterLab server on a copy of labs/."""

    root: Path
    port: int
    token: str
    proc: subprocess.Popen
    log: Path
    seen: dict[int, psutil.Process] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "lab") -> str:
        return f"{self.base_url}/{path}?token={self.token}"

    def remember_tree(self) -> None:
        """Note every descendant now: kernels and their JVMs outlive a dead parent's tree."""
        try:
            for p in psutil.Process(self.proc.pid).children(recursive=True):
                self.seen.setdefault(p.pid, p)
        except psutil.NoSuchProcess:
            pass

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _wait_http(lab: JupyterLab, timeout: float) -> None:
    def alive() -> None:  # a JupyterLab that exited fails at once, not at the timeout
        if lab.proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with code {lab.proc.returncode}:\n"
                        + lab.log_tail())

    def answers() -> bool:
        with urllib.request.urlopen(lab.url("api/status"), timeout=2) as resp:
            return resp.status == 200

    wait_until(f"JupyterLab to answer on {lab.base_url}", answers, timeout, check=alive,
               interval=0.3, retry=(urllib.error.URLError, OSError),
               explain=lambda: ";\n" + lab.log_tail())


def _stop(lab: JupyterLab) -> None:
    """Stop JupyterLab gracefully (it shuts its kernels down, whose atexit stops their
    clusters), then SIGKILL whatever of the remembered tree is still alive."""
    lab.remember_tree()
    if lab.proc.poll() is None:
        lab.proc.send_signal(signal.SIGTERM)
        try:
            lab.proc.wait(20)
        except subprocess.TimeoutExpired:
            lab.proc.kill()
            lab.proc.wait(10)
    alive = [p for p in lab.seen.values() if p.is_running()]
    _, alive = psutil.wait_procs(alive, timeout=10)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)


@pytest.fixture
def labs_copy(tmp_path: Path) -> Path:
    """A private copy of labs/ (the server writes checkpoints and results there)."""
    dest = tmp_path / "labs"
    shutil.copytree(ROOT / "labs", dest, ignore=shutil.ignore_patterns(
        ".ipynb_checkpoints", "results"))
    return dest


@pytest.fixture
def start_lab(tmp_path: Path) -> Iterator[Callable[[Path], JupyterLab]]:
    """Start JupyterLab on a directory; everything it started is stopped at teardown."""
    started: list[JupyterLab] = []

    def start(root: Path) -> JupyterLab:
        home = tmp_path / "jupyter"
        settings = home / "settings"
        for name, value in LAB_SETTINGS.items():
            target = settings / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(value))
        port, token = free_port(), secrets.token_hex(16)
        env = {**os.environ,
               # jupyter_client runs a kernelspec whose argv[0] is "python" with its own
               # sys.executable, and PATH puts the venv first for anything else.
               "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               # Config, data (notebook-signing key) and runtime files of the test
               # stay in its tmp dir; kernelspecs are still found in the venv.
               "JUPYTER_CONFIG_DIR": str(home / "config"),
               "JUPYTER_DATA_DIR": str(home / "data"),
               "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
               "PYTHONUNBUFFERED": "1"}
        log = tmp_path / "jupyterlab.log"
        cmd = [str(VENV_BIN / "jupyter"), "lab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--port={port}", "--port-retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               f"--LabApp.user_settings_dir={settings}",
               f"--LabApp.workspaces_dir={home / 'workspaces'}",
               "--LabApp.news_url=None", "--ServerApp.open_browser=False"]
        if os.geteuid() == 0:  # CI runs as root; JupyterLab refuses that by default
            cmd.append("--allow-root")
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        lab = JupyterLab(root, port, token, proc, log)
        started.append(lab)
        _wait_http(lab, 90)
        return lab

    try:
        yield start
    finally:
        for lab in started:
            _stop(lab)


@pytest.fixture
def page(chromium_executable: str, artifacts: str):
    """A headless Chromium page (Playwright's Python API, never `playwright install`)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_executable, headless=True,
                                     args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()
