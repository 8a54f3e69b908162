"""A student at the classroom's JupyterHub, in Chromium: the login page, the server the
hub starts for them, and chapter 0 open in JupyterLab with a kernel running as their
own Unix user. Screenshots land in ``test-artifacts/``."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import psutil
import pytest

from deliverylab.classroom.hub.users import processes_of
from deliverylab.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def test_a_student_logs_in_and_opens_chapter_0(start_hub, page, artifacts: str):
    hub = start_hub(["dee"])
    s = hub.settings
    page.goto(f"{s.url}/hub/login")
    page.fill("#username_input", "dee")
    page.fill("#password_input", "not-the-password")
    page.click("#login_submit")
    page.wait_for_selector("text=Invalid username or password")

    page.fill("#username_input", "dee")
    page.fill("#password_input", s.password)
    page.click("#login_submit")
    # the hub spawns the server and sends the browser to JupyterLab (default_url)
    page.wait_for_url(f"{s.url}/user/dee/lab/**", timeout=120_000)
    shot = Path(artifacts) / "hub-student-chapter-0.png"
    try:
        page.goto(f"{s.url}/user/dee/lab/tree/labs/00_tour.ipynb")
        # the chapter's own first cell, rendered (not merely a notebook panel)
        page.locator(".jp-Notebook .jp-MarkdownCell").filter(
            has_text="Chapter 0 — A tour of the lab").first.wait_for(timeout=90_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                               timeout=90_000)  # its kernel started
    finally:
        page.screenshot(path=str(shot))

    uid = pwd.getpwnam(s.unix_name("dee")).pw_uid
    wait_until("a kernel running as dee for the open chapter",
               lambda: any("ipykernel" in " ".join(psutil.Process(p).cmdline())
                           for p in processes_of(uid)), 60, interval=0.5)
    home = Path(s.home("dee"))
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    assert os.stat(home / "labs" / "00_tour.ipynb").st_uid == uid
