"""An exported log opens in Inspect's own viewer: `inspect view` started on 127.0.0.1 (a free port) on a directory
holding one log exported from the bundled example, opened in Chromium through Playwright, lists the log's samples;
the viewer is stopped by PID, with every process it started."""
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]
pytest.importorskip("inspect_ai")
pytest.importorskip("playwright")

from processes import alive, descendants, free_port  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response: return response.status == 200
    except OSError: return False


@pytest.fixture
def viewer(tmp_path):
    "The address of `inspect view` serving a directory with one exported log, and that log's sample ids."
    from inspect_ai.log import write_eval_log
    from modelrecord.inspect_logs import eval_log, gathered_attempts
    from modelrecord.sample import example_tree
    groups = gathered_attempts(example_tree())
    log = eval_log(groups[sorted(groups)[0]])
    (tmp_path / "logs").mkdir()
    write_eval_log(log, str(tmp_path / "logs" / "example.eval"), format="eval")
    port = free_port()
    inspect = Path(sys.executable).with_name("inspect")
    with open(tmp_path / "view.log", "w") as output:
        server = subprocess.Popen([str(inspect), "view", "start", "--log-dir", str(tmp_path / "logs"), "--host", "127.0.0.1",
                                   "--port", str(port)], stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                  cwd=tmp_path)
    try:
        deadline = time.monotonic() + 180
        while not answers(f"http://127.0.0.1:{port}/"):
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "view.log").read_text()
            time.sleep(1)
        yield f"http://127.0.0.1:{port}/", [s.id for s in log.samples]
    finally:
        started = descendants(server.pid)
        for pid in [server.pid, *started]:
            try: os.kill(pid, signal.SIGTERM)
            except ProcessLookupError: pass
        server.wait(timeout=30)
        assert not any(alive(pid) for pid in started)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_inspect_view_lists_the_samples_of_an_exported_log(viewer):
    from playwright.sync_api import sync_playwright
    url, ids = viewer
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url, timeout=120_000)
            page.get_by_text(ids[0], exact=True).first.wait_for(timeout=120_000)
            text = page.inner_text("body")
        finally: browser.close()
    assert f"{len(ids)} rows" in text and ids[0] in text and ids[1] in text
