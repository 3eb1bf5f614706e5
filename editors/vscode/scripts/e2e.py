"""The referee extension in a real VS Code (code-server in headless Chromium), end to end.

Installs the .vsix into a code-server of its own (fresh user data and extensions), opens a
workspace with ``referee.path`` set, opens a file, and reads the Problems panel until
referee's findings are there. Then changes a ``referee.*`` setting while the server runs
and waits for the panel to follow, and takes a screenshot. Prints a JSON report; exits 1
when a step fails (the report says which, and the screenshot shows it).

Needs: code-server (``.ci/code-server.sh DIR``), Debian's ``chromium``, and
the Python ``playwright`` package (``pip install playwright``; its browsers are not used).

    python editors/vscode/scripts/e2e.py --code-server DIR --referee .venv/bin/referee \\
        --screenshot docs/images/vscode-diagnostics.png
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

EXTENSION = Path(__file__).resolve().parent.parent
ROOT = EXTENSION.parent.parent
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 60_000


class StepFailed(Exception):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_settings(user_dir: Path, settings: dict[str, Any]) -> None:
    (user_dir / "User").mkdir(parents=True, exist_ok=True)
    (user_dir / "User" / "settings.json").write_text(json.dumps(settings, indent=2))


def wait_http(url: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StepFailed(f"code-server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise StepFailed(f"code-server did not answer at {url} in {timeout_s:.0f} s")


def problem_rows(page: Any) -> list[str]:
    """The Problems panel's rows as shown: message, source(code), position."""
    # One read of every row: the list re-renders while the server publishes again (after
    # the project index is built), and a row counted a moment ago may be gone.
    texts = page.locator(".markers-panel .monaco-list-row").all_inner_texts()
    return [" ".join(text.split()) for text in texts]


def wait_rows(page: Any, condition: Any, what: str) -> list[str]:
    deadline = time.monotonic() + WAIT_MS / 1000
    rows: list[str] = []
    while time.monotonic() < deadline:
        rows = problem_rows(page)
        if condition(rows):
            return rows
        page.wait_for_timeout(250)
    raise StepFailed(f"timed out waiting for {what}; the Problems panel shows {rows}")


def status_text(item: Any) -> str:
    """A status bar item as the extension set it: ``$(check) referee``."""
    icons = []
    for icon in item.locator(".codicon").all():
        names = (icon.get_attribute("class") or "").split()
        icons += [f"$({n.removeprefix('codicon-')})" for n in names if n.startswith("codicon-")]
    return " ".join([*icons, item.inner_text().strip()])


def codes(rows: list[str]) -> set[str]:
    return set(re.findall(r"\bREF\d{3}\b", " ".join(rows)))


def run(args: argparse.Namespace, report: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="referee-e2e-"))
    user_dir, extensions_dir = work / "data", work / "extensions"
    code_server = str(Path(args.code_server) / "bin" / "code-server")
    common = ["--user-data-dir", str(user_dir), "--extensions-dir", str(extensions_dir)]
    settings = {
        "referee.path": str(Path(args.referee).absolute()),
        "referee.trace.server": "messages",
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "security.workspace.trust.enabled": False,
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "telemetry.telemetryLevel": "off",
        "window.commandCenter": False,
        "chat.disableAIFeatures": True,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
    }
    write_settings(user_dir, settings)
    # A copy: the run writes workspace settings, and nothing into the repository. Without
    # .referee/ — a review queue left by an earlier `referee check --judge` there would open
    # the queue's picker where the run expects "nothing waits for review" — and without
    # other local state: the workspace as a fresh clone has it.
    workspace = work / Path(args.workspace).name
    shutil.copytree(
        args.workspace,
        workspace,
        ignore=shutil.ignore_patterns("__pycache__", ".vscode", ".referee", ".pytest_cache"),
    )
    started = time.monotonic()
    installed = subprocess.run(
        [code_server, *common, "--install-extension", str(Path(args.vsix).absolute())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if installed.returncode != 0 or "successfully installed" not in installed.stdout:
        raise StepFailed(f"installing the .vsix failed: {installed.stdout}{installed.stderr}")
    report["install_s"] = round(time.monotonic() - started, 1)

    port = free_port()
    env = {**os.environ, "REFEREE_CACHE_DIR": str(work / "cache")}
    server = subprocess.Popen(
        [
            code_server,
            *common,
            "--auth",
            "none",
            "--bind-addr",
            f"127.0.0.1:{port}",
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            str(workspace),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", server, 60)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=args.chromium, headless=True, args=CHROMIUM_FLAGS
            )
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            try:
                drive(page, port, args, report, work)
            except Exception:
                failure = work.parent / f"{work.name}-failure.png"
                page.screenshot(path=str(failure))
                report["failure_screenshot"] = str(failure)
                raise
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        if args.keep:
            report["kept"] = str(work)
        else:
            shutil.rmtree(work, ignore_errors=True)
        report["total_s"] = round(time.monotonic() - started, 1)


def run_command(page: Any, title: str, answer: str) -> str:
    """Run a command from the palette; the text of the notification it shows."""
    page.keyboard.press("Control+Shift+P")
    quick_input = page.locator(".quick-input-widget input")
    quick_input.wait_for(timeout=WAIT_MS)
    quick_input.fill(f">{title}")
    page.locator(".quick-input-widget .monaco-list-row", has_text=title).first.wait_for(
        timeout=WAIT_MS
    )
    page.keyboard.press("Enter")
    toast = page.locator(".notifications-toasts .notification-toast", has_text=answer).first
    toast.wait_for(timeout=WAIT_MS)
    text = " ".join(toast.inner_text().split())
    dismiss(toast)
    return text


def dismiss(toast: Any) -> None:
    """Close a notification so that it hides nothing the next step looks for.

    VS Code hides an information toast by itself after some seconds, so on a busy machine
    the toast may be hiding, re-rendering or gone by the time the close button is
    clicked: one that is no longer visible is closed, and a click that misses is tried
    again on the toast as it is now.
    """
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.monotonic() + WAIT_MS / 1000
    while toast.is_visible():
        if time.monotonic() > deadline:
            raise StepFailed("a notification did not close")
        try:
            toast.hover(timeout=2_000)
            toast.locator(".codicon-notifications-clear").first.click(timeout=2_000)
        except PlaywrightError:  # a timeout or a detached element: look again
            continue


def drive(
    page: Any, port: int, args: argparse.Namespace, report: dict[str, Any], work: Path
) -> None:
    workspace = work / Path(args.workspace).name
    started = time.monotonic()
    page.goto(f"http://127.0.0.1:{port}/?folder={workspace}", wait_until="domcontentloaded")
    page.locator(".monaco-workbench .part.editor").wait_for(timeout=WAIT_MS)
    report["workbench_s"] = round(time.monotonic() - started, 1)

    # Open the file through Quick Open, as a user would.
    page.locator(".monaco-workbench").click(position={"x": 640, "y": 300})
    page.keyboard.press("Control+P")
    quick_input = page.locator(".quick-input-widget input")
    quick_input.wait_for(timeout=WAIT_MS)
    quick_input.fill(args.file)
    page.locator(".quick-input-widget .monaco-list-row").first.wait_for(timeout=WAIT_MS)
    page.keyboard.press("Enter")
    name = Path(args.file).name
    page.locator(f".tabs-container .tab[aria-label^='{name}']").wait_for(timeout=WAIT_MS)

    page.keyboard.press("Control+Shift+M")  # View: Problems
    page.locator(".markers-panel").wait_for(timeout=WAIT_MS)
    rows = wait_rows(page, lambda rows: len(codes(rows)) >= 3, "referee's findings")
    report["problems_s"] = round(time.monotonic() - started, 1)
    report["problems"] = rows
    report["codes"] = sorted(codes(rows))
    status = page.locator(".statusbar-item", has_text="referee").first
    report["status_bar"] = status_text(status)
    if args.screenshot:
        page.wait_for_timeout(500)  # the last repaint
        Path(args.screenshot).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=args.screenshot)
        report["screenshot"] = args.screenshot

    # The commands, from the command palette.
    report["check_workspace"] = run_command(page, "referee: Check Workspace", "referee checked")
    report["review_queue"] = run_command(page, "referee: Open Review Queue", "review")

    # A setting changed while the server runs applies without a restart (workspace
    # settings: code-server does not notice a change to the user settings file).
    settings = workspace / ".vscode" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    ignored = report["codes"][0]
    settings.write_text(json.dumps({"referee.ignore": [ignored]}))
    after = wait_rows(
        page,
        lambda rows: codes(rows) and ignored not in codes(rows),
        f"{ignored} to leave the Problems panel after referee.ignore = [{ignored!r}]",
    )
    report["codes_with_ignore"] = sorted(codes(after))

    # An interpreter without referee: the server is not started, and the user is told
    # the exact install command.
    python = work / "python-without-referee"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(0o755)
    settings.write_text(json.dumps({"referee.path": "", "referee.interpreter": str(python)}))
    toast = page.locator(
        ".notifications-toasts .notification-toast", has_text="pip install referee"
    )
    toast.first.wait_for(timeout=WAIT_MS)
    report["not_installed_message"] = " ".join(toast.first.inner_text().split())
    expected = f"{python} -m pip install referee"
    if expected not in report["not_installed_message"]:
        raise StepFailed(f"the message does not name {expected!r}")
    report["status_bar_not_installed"] = status_text(status)
    if "$(error)" not in report["status_bar_not_installed"]:
        raise StepFailed(
            f"the status bar shows {report['status_bar_not_installed']!r}, not an error"
        )

    # Back to referee.path: the server restarts and the findings return.
    settings.write_text("{}")
    wait_rows(page, lambda rows: ignored in codes(rows), f"{ignored} to come back after a restart")
    report["status_bar_restarted"] = status_text(status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code-server", required=True, help="DIR of .ci/code-server.sh")
    parser.add_argument("--referee", required=True, help="the referee executable to run")
    parser.add_argument("--vsix", default=str(EXTENSION / "referee.vsix"))
    parser.add_argument("--workspace", default=str(ROOT / "examples" / "demo"))
    parser.add_argument("--file", default="tests/test_vowels.py")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--screenshot", help="write a PNG of the window here")
    parser.add_argument("--keep", action="store_true", help="keep code-server's data and logs")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"ok": False}
    try:
        run(args, report)
        report["ok"] = True
    except StepFailed as exc:
        report["error"] = str(exc)
    except Exception as exc:  # a Playwright timeout names the selector it waited for
        report["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
