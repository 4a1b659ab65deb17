"""The explorers in a real browser: JupyterLab driven by headless Chromium through Playwright.

The test starts JupyterLab on loopback (a free port, a random token, a temporary root holding a copy of
``tests/data/browser/explorers.ipynb``, its own config, data, settings and workspace folders), opens the
notebook, runs all cells, checks that no cell errors, then moves each explorer's controls and checks that
the rendered text changes each time. Screenshots go to ``build/screenshots/``. The server, its kernels
and the browser are stopped also when the test fails.

It needs Chromium on PATH (``chromium`` or ``chromium-browser``; on Debian/Ubuntu
``apt-get install -y --no-install-recommends chromium``, which ``.ci/run`` does when run as root) and the
``playwright`` and ``jupyterlab`` packages (the ``test`` extra). Playwright's own browser download
(``playwright install``) is not used. Without them the test is skipped with the reason, unless
``RAGLAB_REQUIRE_BROWSER=1`` is set (``.ci/run`` sets it): then ``test_the_browser_test_can_run`` fails
with the reason, so CI cannot pass without having driven the widgets.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, TEST_DATA

pytestmark = pytest.mark.slow

NOTEBOOK = TEST_DATA / "browser" / "explorers.ipynb"
SCREENSHOTS = REPO / "build" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Generous: a cold kernel start and the first import of pandas/ipywidgets on a slow CI machine.
SERVER_TIMEOUT = 90.0
PAGE_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 30_000
ACTION_TIMEOUT_MS = 10_000  # one click or read; a failed action is retried

# Set (to anything but "" or "0") where the browser test must run, as in CI: a missing requirement then
# fails test_the_browser_test_can_run instead of skipping the module.
REQUIRE_VARIABLE = "RAGLAB_REQUIRE_BROWSER"
REQUIRED = os.environ.get(REQUIRE_VARIABLE, "").strip() not in ("", "0")


def _missing_requirement() -> str | None:
    """Why the browser test cannot run here, or None."""
    if CHROMIUM is None:
        return ("needs Chromium on PATH (`chromium` or `chromium-browser`) to drive JupyterLab; install it with "
                "`apt-get install -y --no-install-recommends chromium` (CI's .ci/run does this as root). "
                "Playwright's own download (`playwright install`) is not used.")
    for module, reason in (("playwright", "needs playwright (`pip install -e '.[test]'`) to drive Chromium"),
                           ("jupyterlab", "needs jupyterlab (`pip install -e '.[test]'`) to serve the notebook")):
        if importlib.util.find_spec(module) is None:
            return reason
    return None


MISSING = _missing_requirement()
if MISSING is not None and not REQUIRED:
    pytest.skip(f"{MISSING} (set {REQUIRE_VARIABLE}=1 to make this a failure)", allow_module_level=True)
if MISSING is None:
    from playwright import sync_api
needs_browser = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING}")

# JupyterLab user settings for the test: every cell attached to the page (no virtual scrolling, so
# every output can be located), and no news or update prompts over the notebook (and no network calls).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


# An error output (a traceback, or IPython's short form for a SyntaxError), not a warning on stderr.
_ERROR = re.compile(r"Traceback \(most recent call last\)|^\s*[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b\s*:?",
                    re.MULTILINE)


def _is_error(text: str) -> bool:
    return bool(_ERROR.search(text))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Lab:
    """A running JupyterLab server: its URL, token, root folder and log."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root, self.log_path = root, log
        self.port, self.token = _free_port(), secrets.token_hex(24)
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else "(no log)"

    def request(self, path: str, method: str = "GET", timeout: float = 5.0, body: Any = None) -> Any:
        req = urllib.request.Request(f"{self.base}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def start(self, home: Path) -> None:
        env = dict(os.environ)
        # Keep the user's Jupyter config, kernels (a ~/.local python3 kernel would shadow this venv's),
        # lab settings and workspaces out of the test; the venv's kernel and lab extensions still count.
        for name, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                          ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                          ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")]:
            (home / sub).mkdir(parents=True, exist_ok=True)
            env[name] = str(home / sub)
        env.pop("JUPYTER_PATH", None)
        for name, values in LAB_SETTINGS.items():
            path = home / "settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        command = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
        ]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=self.root, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + SERVER_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"JupyterLab exited with code {self.process.returncode} before it "
                                     f"answered; its log:\n{self.log()}")
            try:
                self.request("/api/status", timeout=2)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"JupyterLab did not answer on {self.base} within {SERVER_TIMEOUT:.0f} s; "
                                     f"its log:\n{self.log()}")
            time.sleep(0.25)

    def start_kernel(self, notebook: str) -> str:
        """Start the notebook's kernel session before the page opens, so the page attaches to it.

        Left to itself, JupyterLab can start two kernels for a freshly opened notebook and shut one
        down, and a Run All sent in between loses the queued cells.
        """
        session = self.request("/api/sessions", method="POST", timeout=60, body={
            "path": notebook, "name": notebook, "type": "notebook", "kernel": {"name": "python3"}})
        return session["kernel"]["id"]

    def kernels(self) -> list[str]:
        return [kernel["id"] for kernel in self.request("/api/kernels")]

    def stop(self) -> None:
        """Shut down the kernels and the server (politely, then by signal)."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            self.request("/api/shutdown", method="POST", timeout=10)
        try:
            self.process.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            pass
        self.process.terminate()  # the server shuts its kernels down on SIGTERM too
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    home = tmp_path_factory.mktemp("jupyter")
    root = home / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    server = Lab(root, home / "jupyterlab.log")
    try:
        server.start(home)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield chromium
        finally:
            chromium.close()


class Notebook:
    """The test notebook open in JupyterLab, all cells run; helpers to find cells and read their text."""

    def __init__(self, page: Any, lab: Lab) -> None:
        self.page, self.lab = page, lab
        self.messages: list[str] = []  # browser console errors and the test's own notes, for failure messages
        page.on("console", lambda msg: self.messages.append(f"console.{msg.type}: {msg.text}")
                if msg.type == "error" else None)
        page.on("pageerror", lambda exc: self.messages.append(f"page error: {exc}"))

    def page_text(self) -> str:
        try:
            text = self.page.locator(".jp-NotebookPanel .jp-Notebook").inner_text(timeout=5_000)
        except sync_api.Error as exc:
            text = f"(could not read the notebook: {exc})"
        extra = "\n".join(self.messages[-20:])
        return f"--- notebook text ---\n{text[-6000:]}\n--- browser messages ---\n{extra or '(none)'}"

    def fail(self, what: str) -> None:
        self.shot("failure")
        pytest.fail(f"{what}\n{self.page_text()}\n--- JupyterLab log ---\n{self.lab.log()}", pytrace=False)

    def shot(self, name: str, target: Any = None) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(sync_api.Error):  # a screenshot is a help, never the failure
            (target or self.page).screenshot(path=str(SCREENSHOTS / f"browser-{name}.png"))

    def dismiss_dialogs(self) -> None:
        """Answer a dialog over the notebook, noting its text.

        Under load JupyterLab's page can miss the session started for the notebook and ask "Select
        Kernel" (also when Run All is chosen before it attached): answer with that session's kernel,
        so no second kernel starts. Any other dialog is cancelled.
        """
        dialogs = self.page.locator(".jp-Dialog")
        for _ in range(3):
            if not dialogs.count():
                return
            with contextlib.suppress(sync_api.Error):
                dialog = dialogs.first
                text = " ".join(dialog.inner_text().split())
                self.shot("0-dialog")
                labels = (dialog.locator("select").first.evaluate("s => [...s.options].map(o => o.label)")
                          if dialog.locator("select").count() else [])
                ours = [label for label in labels if label.startswith(f"{NOTEBOOK.name} (")]
                if text.startswith("Select Kernel") and ours:
                    dialog.locator("select").first.select_option(label=ours[0])
                    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
                    self.messages.append(f"test: answered a dialog with the notebook's session kernel {ours[0]}: {text}")
                else:
                    dialog.locator(".jp-Dialog-button.jp-mod-reject").first.click()
                    self.messages.append(f"test: cancelled a dialog: {text}")
                dialog.wait_for(state="detached", timeout=5_000)

    def act(self, what: str, action: Callable[[], Any]) -> None:
        """Do ``action``; when it fails (a late dialog over the page takes the click), close dialogs and retry."""
        for attempt in range(1, 4):
            try:
                action()
                return
            except sync_api.Error as exc:
                self.messages.append(f"test: {what} failed (attempt {attempt}): {str(exc).splitlines()[0]}")
                with contextlib.suppress(sync_api.Error):
                    self.page.keyboard.press("Escape")  # an open menu
                self.dismiss_dialogs()
        self.fail(f"could not do {what} (three attempts)")

    def cell(self, source: str) -> Any:
        """The code cell whose input contains ``source``."""
        cell = self.page.locator(".jp-Notebook .jp-CodeCell").filter(
            has=self.page.locator(".jp-InputArea", has_text=source))
        if cell.count() != 1:
            self.fail(f"expected one code cell containing {source!r}, found {cell.count()}")
        return cell

    def wait(self, what: str, condition: Callable[[], bool], timeout: float = STEP_TIMEOUT_MS / 1000) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.fail(f"timed out after {timeout:.0f} s waiting for {what}")
            self.page.wait_for_timeout(200)


@pytest.fixture(scope="module")
def notebook(lab: Lab, browser: Any) -> Iterator[Notebook]:
    for old in SCREENSHOTS.glob("browser-*.png"):  # no stale pictures (a failure from an earlier run)
        old.unlink()
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    page = context.new_page()
    nb = Notebook(page, lab)
    kernel = lab.start_kernel(NOTEBOOK.name)
    try:
        page.goto(f"{lab.base}/lab/tree/{NOTEBOOK.name}?reset&token={lab.token}", timeout=PAGE_TIMEOUT_MS)
        idle = page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status=idle]")
        kernel_name = page.locator(".jp-NotebookPanel-toolbar .jp-KernelName")

        def attached() -> bool:  # the toolbar names the kernel and it is idle
            nb.dismiss_dialogs()
            try:
                return bool(idle.count() and kernel_name.count()
                            and kernel_name.first.inner_text(timeout=2_000).strip() not in ("", "Kernel", "No Kernel"))
            except sync_api.Error:  # the toolbar is being redrawn
                return False

        nb.wait("the notebook to attach to its kernel (the toolbar names it, "
                "`.jp-Notebook-ExecutionIndicator[data-status=idle]`)", attached, timeout=PAGE_TIMEOUT_MS / 1000)
        page.wait_for_timeout(1000)  # a late "Select Kernel" dialog shows up within this
        nb.shot("0-opened")
        if lab.kernels() != [kernel]:
            nb.fail(f"expected the page to use the one kernel started for it ({kernel}), "
                    f"the server runs {lab.kernels()}")
        # Run All is done when every code cell has an execution count ("[n]:", not "[ ]:" or "[*]:"),
        # or when a cell raised (the kernel then skips the cells after it).
        code_cells = page.locator(".jp-Notebook .jp-CodeCell")
        stderr = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")

        def prompts() -> list[str]:
            return [p.strip().strip("[]:").strip() for p in code_cells.locator(".jp-InputArea-prompt").all_inner_texts()]

        def all_ran() -> bool:
            return bool(prompts()) and all(p.isdigit() for p in prompts())

        def raised() -> list[str]:  # error outputs and stderr share a mime type: tell them by their text
            return [text for text in stderr.all_inner_texts() if _is_error(text)]

        def run_all() -> None:
            page.locator(".jp-NotebookPanel .jp-Notebook").click(position={"x": 5, "y": 5})  # the current widget
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-item:visible .lm-Menu-itemLabel", has_text="Run All Cells").first.click()

        for attempt in range(1, 4):
            nb.act("choosing Run > Run All Cells", run_all)
            deadline = time.monotonic() + 15
            while not any(prompts()) and time.monotonic() < deadline:  # "[*]" or "[1]" once it started
                page.wait_for_timeout(200)
            if any(prompts()):
                break
            nb.messages.append(f"test: Run All (attempt {attempt}) started no cell within 15 s")
            nb.shot(f"0-run-all-attempt-{attempt}")
        else:
            nb.fail("Run All started no cell (three attempts)")
        nb.wait("every cell to run (each input prompt shows an execution count)",
                lambda: all_ran() or bool(raised()), timeout=PAGE_TIMEOUT_MS / 1000)
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status=idle]",
                               timeout=PAGE_TIMEOUT_MS)
        nb.shot("1-ran")
        if raised():
            nb.fail("a cell raised:\n" + "\n".join(raised()))
        if not all_ran():
            nb.fail("Run All did not run every cell")
        for text in stderr.all_inner_texts():  # a warning is not an error, but should be seen
            warnings.warn(f"a notebook cell wrote to stderr: {text.strip()[:500]}", stacklevel=1)
        try:
            page.wait_for_selector(".widget-dropdown select", timeout=PAGE_TIMEOUT_MS)
        except sync_api.TimeoutError:
            nb.fail("no widget was drawn (no `.widget-dropdown select`); is the ipywidgets lab extension installed?")
        yield nb
    finally:
        context.close()
        notes = [m for m in nb.messages if m.startswith("test:")]
        if notes:  # retries that saved the run: worth seeing when the machine is slow
            warnings.warn("the browser test recovered from: " + "; ".join(notes), stacklevel=1)



def _output_text(cell: Any) -> str:
    return cell.locator(".jp-OutputArea-output").first.inner_text()


def _body(cell: Any) -> Any:
    """The explorer's row view: the last HTML widget (after the slice, sort and position rows)."""
    return cell.locator(".jp-OutputArea-output").first.locator(".widget-html-content").last


def _question(cell: Any) -> str:
    """The question id the row view shows (its first heading)."""
    return _body(cell).locator("h4").first.inner_text().strip()


def _dropdown(nb: Notebook, cell: Any, label: str) -> Any:
    box = cell.locator(".widget-dropdown").filter(has=nb.page.locator("label", has_text=label))
    if box.count() != 1:
        nb.fail(f"expected one dropdown labelled {label!r} in the explorer, found {box.count()}")
    return box.locator("select")


def _changes(nb: Notebook, cell: Any, what: str, action: Callable[[], None], shot: str, *,
             moves: bool = False) -> str:
    """Do ``action`` on the explorer in ``cell`` and wait until its rendered text changes.

    With ``moves`` (next, previous, the slider) the row view itself must change to another question,
    not only the position line.
    """
    before, question = _output_text(cell), _question(cell)
    nb.act(what, action)
    nb.wait(f"the explorer's text to change after {what}", lambda: _output_text(cell) != before)
    if moves:
        nb.wait(f"the row view to show another question than {question!r} after {what}",
                lambda: _question(cell) != question)
    nb.shot(shot, cell.locator(".jp-OutputArea-output").first)
    return _output_text(cell)


def _status(cell: Any) -> str:
    """The explorer's position line ("2 of 11 (qtype = fact)"): the first HTML widget, next to the slider."""
    return cell.locator(".widget-hbox .widget-html-content").first.inner_text().strip()


def _handbook() -> Any:
    from raglab import datasets

    return datasets.handbook()


def test_the_browser_test_can_run() -> None:
    """Passes where the browser test runs; fails (instead of skipping) when it cannot and it is required."""
    if MISSING is not None:
        pytest.fail(f"{REQUIRE_VARIABLE}={os.environ.get(REQUIRE_VARIABLE)!r} asks for the browser test, but it "
                    f"cannot run here: {MISSING}", pytrace=False)


def test_a_required_browser_test_fails_without_chromium(tmp_path: Path) -> None:
    """With RAGLAB_REQUIRE_BROWSER=1 and no Chromium on PATH the run fails; without the variable it skips."""
    env = {key: value for key, value in os.environ.items() if key != REQUIRE_VARIABLE}
    env["PATH"] = str(tmp_path)  # an empty folder: no chromium on PATH
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
               __file__, "-k", "test_the_browser_test_can_run"]
    skipped = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert skipped.returncode in (0, 5), skipped.stdout + skipped.stderr  # 5: the module skipped, nothing ran
    assert "skipped" in skipped.stdout and "needs Chromium on PATH" in skipped.stdout, skipped.stdout
    assert f"set {REQUIRE_VARIABLE}=1 to make this a failure" in skipped.stdout, skipped.stdout
    required = subprocess.run(command, cwd=REPO, env={**env, REQUIRE_VARIABLE: "1"},
                              capture_output=True, text=True, timeout=120)
    assert required.returncode == 1, required.stdout + required.stderr
    assert "1 failed" in required.stdout and "needs Chromium on PATH" in required.stdout, required.stdout


@needs_browser
def test_explore_responds_to_every_control(notebook: Notebook) -> None:
    nb = notebook
    fact = _handbook().query("qtype == 'fact'")["question_id"].tolist()
    cell = nb.cell('rows.rag.explore(by="qtype")')
    nb.shot("explore-0-first-row", cell.locator(".jp-OutputArea-output").first)
    assert _status(cell) == "1 of 36", nb.page_text()
    assert _question(cell) == "h01", nb.page_text()

    _changes(nb, cell, "choosing the slice qtype = fact",
             lambda: _dropdown(nb, cell, "qtype").select_option("fact"), "explore-1-slice")
    assert _status(cell) == "1 of 11 (qtype = fact)", nb.page_text()
    assert len(fact) == 11 and _question(cell) == fact[0], nb.page_text()

    _changes(nb, cell, "clicking next", lambda: cell.get_by_role("button", name="next").click(), "explore-2-next",
             moves=True)
    assert _status(cell) == "2 of 11 (qtype = fact)", nb.page_text()
    assert _question(cell) == fact[1], nb.page_text()

    text = _changes(nb, cell, "sorting worst first by human_faithful",
                    lambda: _dropdown(nb, cell, "worst first").select_option("human_faithful (lowest first)"),
                    "explore-3-sort")
    assert _status(cell) == "1 of 11 (qtype = fact)", nb.page_text()
    assert "sorted by human_faithful, worst (lowest) first" in text, nb.page_text()
    seen = [_question(cell)]

    handle = cell.locator(".widget-slider .noUi-handle")
    _changes(nb, cell, "pressing the right arrow on the slider",
             lambda: (handle.focus(), handle.press("ArrowRight")), "explore-4-slider", moves=True)
    assert _status(cell) == "2 of 11 (qtype = fact)", nb.page_text()
    seen.append(_question(cell))
    _changes(nb, cell, "pressing End on the slider", lambda: handle.press("End"), "explore-5-slider-end", moves=True)
    assert _status(cell) == "11 of 11 (qtype = fact)", nb.page_text()
    seen.append(_question(cell))
    assert len(set(seen)) == 3 and set(seen) <= set(fact), (seen, nb.page_text())


def _sides(nb: Notebook, cell: Any) -> tuple[str, str]:
    """The baseline's and the candidate's half of the pair view (the outer table's two cells)."""
    sides = _body(cell).locator(":scope > table > tbody > tr > td")
    if sides.count() != 2:
        nb.fail(f"expected the pair view to hold two sides, found {sides.count()}")
    return sides.nth(0).inner_text(), sides.nth(1).inner_text()


def _retrieved(side: str) -> str:
    """The side's retrieved line (ids with ✓ on gold, and the gold it missed)."""
    match = re.search(r"Retrieved: *(.*)", side)
    assert match, side
    return match.group(1).strip()


def _check_sides(nb: Notebook, cell: Any, question: str) -> None:
    """The view shows ``question``; the baseline retrieved its gold (✓), the candidate lost it to p99."""
    assert _question(cell) == question, nb.page_text()
    base, cand = _sides(nb, cell)
    assert base.startswith("baseline") and cand.startswith("candidate"), (base, cand)
    assert "(candidate)" in cand and "(candidate)" not in base, (base, cand)
    base_ids, cand_ids = _retrieved(base), _retrieved(cand)
    assert base_ids != cand_ids, (base_ids, cand_ids)
    assert "✓" in base_ids and "p99" not in base_ids and "gold not retrieved" not in base_ids, base_ids
    assert "1. p99" in cand_ids and "✓" not in cand_ids and "gold not retrieved" in cand_ids, cand_ids


@needs_browser
def test_explore_pair_responds_to_every_control(notebook: Notebook) -> None:
    # The notebook's candidate flips every 5th question's human_faithful: 5 pass->fail (2 of them yesno),
    # 3 fail->pass (2 yesno); 3 questions have no label. Those questions' candidate also retrieved p99
    # in place of the gold passage.
    nb = notebook
    rows = _handbook()
    flipped = rows.iloc[::5]
    pass_fail = flipped.loc[flipped["human_faithful"] == 1.0]
    fail_pass = flipped.loc[flipped["human_faithful"] == 0.0]
    assert len(pass_fail) == 5 and len(fail_pass) == 3
    pass_fail_ids = pass_fail["question_id"].tolist()
    cell = nb.cell('rows.rag.explore_pair(cand, by="qtype", metric="human_faithful")')
    nb.shot("pair-0-first-question", cell.locator(".jp-OutputArea-output").first)
    assert _status(cell) == "1 of 36", nb.page_text()
    _check_sides(nb, cell, "h01")

    text = _changes(nb, cell, "choosing flip = pass->fail",
                    lambda: _dropdown(nb, cell, "flip").select_option("pass->fail"), "pair-1-flip")
    assert _status(cell) == "1 of 5 (pass->fail)", nb.page_text()
    assert "pass → fail" in text, nb.page_text()
    _check_sides(nb, cell, pass_fail_ids[0])

    _changes(nb, cell, "clicking next", lambda: cell.get_by_role("button", name="next").click(), "pair-2-next",
             moves=True)
    assert _status(cell) == "2 of 5 (pass->fail)", nb.page_text()
    _check_sides(nb, cell, pass_fail_ids[1])
    _changes(nb, cell, "clicking previous", lambda: cell.get_by_role("button", name="previous").click(),
             "pair-3-previous", moves=True)
    assert _status(cell) == "1 of 5 (pass->fail)", nb.page_text()
    _check_sides(nb, cell, pass_fail_ids[0])

    handle = cell.locator(".widget-slider .noUi-handle")
    _changes(nb, cell, "pressing End on the slider", lambda: (handle.focus(), handle.press("End")), "pair-4-slider",
             moves=True)
    assert _status(cell) == "5 of 5 (pass->fail)", nb.page_text()
    _check_sides(nb, cell, pass_fail_ids[-1])

    _changes(nb, cell, "choosing the slice qtype = yesno",
             lambda: _dropdown(nb, cell, "qtype").select_option("yesno"), "pair-5-slice")
    assert _status(cell) == "1 of 2 (qtype = yesno, pass->fail)", nb.page_text()
    _check_sides(nb, cell, pass_fail.loc[pass_fail["qtype"] == "yesno", "question_id"].iloc[0])

    text = _changes(nb, cell, "choosing flip = fail->pass",
                    lambda: _dropdown(nb, cell, "flip").select_option("fail->pass"), "pair-6-flip")
    assert _status(cell) == "1 of 2 (qtype = yesno, fail->pass)", nb.page_text()
    assert "fail → pass" in text, nb.page_text()
    _check_sides(nb, cell, fail_pass.loc[fail_pass["qtype"] == "yesno", "question_id"].iloc[0])
