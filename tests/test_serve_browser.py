"""`modelrecord explore`'s server, from outside: what other users can see of it, what a page view
leaves behind, what it logs, and how its page scrolls, driven through headless Chromium.

Chromium is Debian's (`/usr/bin/chromium`), driven through Playwright's Python package with
`executable_path` (Playwright's own browser download is never used). Every server is started as
the command line starts it and stopped by PID, with every process it started.
"""
import os
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from modelrecord.sample import example_tree
from processes import alive, cmdline, descendants, explore_server, free_port

CHROMIUM = Path("/usr/bin/chromium")
browser_needed = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
READY = ".mr-summary table"  # the page is ready when the Overview's summary shows
VIEWS = []  # the seconds from navigation to ready of every view in this module


def kernels(server) -> list:
    "The kernel processes the server runs now."
    return [pid for pid in descendants(server.process.pid) if alive(pid) and "ipykernel" in cmdline(pid)]


class Server:
    "A running `modelrecord explore`: its address, token, process and log."
    def __init__(self, url, process, log_path):
        self.url, self.process, self.log_path = url, process, log_path
        self.token = urlsplit(url).query.split("token=", 1)[1]
        self.port = urlsplit(url).port

    def log(self) -> str: return self.log_path.read_text(errors="replace")


@contextmanager
def explore(tmp_path, *options, tree=None):
    "Run `modelrecord explore` of `tree` (default: the example tree) with `options`; stop it, and all it started, by PID."
    port = free_port()
    log_path = tmp_path / f"server-{port}.log"
    with open(log_path, "w") as log, explore_server(log, str(tree or example_tree()), "--port", str(port), *options, wait=300) as started:
        yield Server(started[0], started[1], log_path)


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try: yield browser
        finally: browser.close()


def view(browser, url, timeout=90_000):
    "Open the page at `url` in a new tab; return `(page, seconds from navigation to ready)`."
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    started = time.perf_counter()
    page.goto(url, timeout=timeout)
    page.wait_for_selector(READY, timeout=timeout)
    VIEWS.append(time.perf_counter() - started)
    return page, VIEWS[-1]


def leave(page):
    "Close the page as a person does, by leaving it: its `beforeunload` runs and its beacons go out."
    page.goto("about:blank")  # Playwright's `close(run_before_unload=True)` drops beacons sent on the way out
    page.close()


def settle(condition, seconds: float) -> bool:
    "Whether `condition()` holds within `seconds` (polled)."
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition(): return True
        time.sleep(0.5)
    return condition()


@pytest.fixture(scope="module")
def tmp_module(tmp_path_factory): return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="module")
def server(tmp_module):
    "One server of the example tree, with the settings the command line uses."
    with explore(tmp_module) as running: yield running


def test_the_token_is_on_no_command_line(server):
    "Any local user reads every process's command line (`ps`, /proc/<pid>/cmdline): the token is on none."
    holders = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if server.token in cmdline(pid)]
    assert holders == [], [cmdline(pid)[:200] for pid in holders]
    environ = Path(f"/proc/{descendants(server.process.pid)[0]}/environ")
    assert environ.stat().st_mode & 0o077 == 0  # the environment that carries it is readable by its owner alone


@browser_needed
def test_closed_pages_leave_at_most_one_kernel(server):
    "Open and close the page 5 times: afterwards the server holds at most one kernel (the pre-warmed one)."
    times = []
    with chromium() as browser:
        for _ in range(5):
            page, seconds = view(browser, server.url)
            times.append(seconds)
            leave(page)
    print("navigation -> page ready, s:", " ".join(f"{t:.2f}" for t in times))
    assert settle(lambda: len(kernels(server)) <= 1, 20), f"{len(kernels(server))} kernels after 5 closed views"


@browser_needed
def test_a_token_holder_cannot_execute_code_through_the_websocket(server, tmp_path):
    "The page's kernel takes the widgets' messages, never an `execute_request`: the token opens the page, not a shell."
    witness = tmp_path / "executed"
    code = f"open({str(witness)!r}, 'w').write('ran')"
    with chromium() as browser:
        page, _ = view(browser, server.url)
        kernel_id = page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId")
        replies = page.evaluate("""async ([kernel, code]) => {
            const socket = new WebSocket(`ws://${location.host}/api/kernels/${kernel}/channels`);
            const replies = [];
            socket.onmessage = m => replies.push(JSON.parse(m.data).msg_type || '');
            await new Promise(ok => socket.onopen = ok);
            const header = {msg_id: 'x' + Math.random(), session: 's' + Math.random(), username: 'intruder',
                            msg_type: 'execute_request', version: '5.3', date: new Date().toISOString()};
            socket.send(JSON.stringify({header, parent_header: {}, metadata: {}, channel: 'shell',
                                        content: {code, silent: false, store_history: false, user_expressions: {},
                                                  allow_stdin: false, stop_on_error: true}}));
            await new Promise(ok => setTimeout(ok, 3000));
            socket.close();
            return replies;
        }""", [kernel_id, code])
        leave(page)
    assert "execute_reply" not in replies and not witness.exists()


@browser_needed
def test_the_document_scrolls(server):
    "The page scrolls as a document: the browser's own scroll moves it, and a full-page screenshot holds all of it."
    with chromium() as browser:
        page, _ = view(browser, server.url)
        scroll = page.evaluate("() => { const before = document.scrollingElement.scrollHeight; window.scrollTo(0, 600);"
                               " return [before, window.innerHeight, window.scrollY]; }")
        page.wait_for_timeout(300)
        shot = page.screenshot(full_page=True)
        leave(page)
    height, viewport, scrolled = scroll
    assert height > viewport and scrolled > 0, scroll
    assert int.from_bytes(shot[20:24], "big") >= height - 1  # the PNG's height: the whole document


@browser_needed
def test_idle_kernels_of_pages_gone_without_a_word_are_culled(tmp_path):
    "A page that vanishes without `beforeunload` (a crash, a lost network) leaves a kernel: culled once idle."
    with explore(tmp_path, "--idle-timeout", "4") as server, chromium() as browser:
        page, _ = view(browser, server.url)
        page.close()  # no beforeunload: the kernel is not told
        assert settle(lambda: len(kernels(server)) <= 1, 30), f"{len(kernels(server))} kernels left"


@browser_needed
def test_the_log_says_nothing_of_trust_or_tcp(server):
    "After the views above (or one of its own): the shipped page is trusted, its kernels talk over IPC: neither warning is logged."
    if not VIEWS:
        with chromium() as browser: leave(view(browser, server.url)[0])
    log = server.log()
    assert "is not trusted" not in log, log[-2000:]
    assert "without encryption" not in log, log[-2000:]
