"""The explorer inside a real JupyterLab, in Chromium: a 1400 px window with the file browser open.

JupyterLab (the dev extra) is started on 127.0.0.1 with a token, in a scratch directory holding one
notebook that shows the explorer of the example tree, and stopped by its PID. The test runs the
notebook, checks that the widgets render, that a filter changes the attempts grid, and that no
element of the output is wider than the cell (each wide piece scrolls inside itself). The
screenshot goes to `test-artifacts/explore-jupyterlab.png`.
"""
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from modelrecord.sample import example_tree
from modelrecord.tables import load

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")]

# What is wider than the cell's output area, outside the pieces that scroll inside themselves.
TOO_WIDE = """() => {
    const area = document.querySelector('.jp-Notebook .jp-Cell-outputArea');
    const edge = area.getBoundingClientRect().right + 1;
    const wide = Array.from(area.querySelectorAll('*')).filter(e => {
        if (e.closest('.mr-grid-view, .mr-scroll, .mr-pre, .lm-TabBar')) return false;
        const box = e.getBoundingClientRect();
        return box.width > 0 && box.right > edge;
    }).map(e => e.className || e.tagName);
    const scrolling = Array.from(area.querySelectorAll('*')).filter(e =>
        !e.closest('.mr-grid-view, .mr-scroll, .mr-pre') && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)
        && e.scrollWidth > e.clientWidth + 1).map(e => e.className || e.tagName);
    return {cell: area.getBoundingClientRect().width, wide, scrolling};
}"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    "JupyterLab on 127.0.0.1 serving `tmp_path`, which holds explorer.ipynb: `(url of the notebook, token)`."
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from modelrecord.explore import Explorer\nExplorer({str(example_tree())!r})")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "explorer.ipynb")
    port, token = free_port(), secrets.token_urlsafe(18)
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "jupyterlab.log", "w")
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_CONFIG_DIR": str(tmp_path / ".config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / ".runtime")}
    process = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                                f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={tmp_path}", "--allow-root",
                                "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                               cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, f"jupyter lab stopped (see {ARTIFACTS / 'jupyterlab.log'})"
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
                break
            except OSError: time.sleep(0.5)
        else: pytest.fail("jupyter lab did not answer within 120 s")
        yield f"http://127.0.0.1:{port}/lab/tree/explorer.ipynb?token={token}", token
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try: process.wait(30)
            except subprocess.TimeoutExpired: os.killpg(process.pid, signal.SIGKILL); process.wait()
        log.close()


def test_the_explorer_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright
    url, token = lab
    tables = load(example_tree())
    model = "openai:gpt-5"
    kept = int((tables.attempts.model == model).sum())
    errors = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            page.wait_for_selector(".jp-KernelStatus, .jp-Toolbar-kernelStatus, .jp-Notebook-ExecutionIndicator", timeout=60_000)
            if not page.locator("#filebrowser").is_visible():  # the file browser open, as a person has it
                page.keyboard.press("Control+Shift+f")
                page.wait_for_selector("#filebrowser", state="visible", timeout=20_000)
            page.wait_for_function("() => document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')"
                                   " && document.querySelector('#jp-main-statusbar').innerText.includes('| Idle')", timeout=120_000)
            page.click(".jp-Notebook .jp-Cell .jp-InputArea-editor")  # the kernel is up: run the cell
            page.keyboard.press("Shift+Enter")
            page.wait_for_selector(".jp-Notebook .jp-Cell-outputArea .jp-OutputArea-child", timeout=120_000)

            page.wait_for_selector(".jp-Notebook .mr-summary table", timeout=90_000)
            page.wait_for_selector(".jp-Notebook .mr-plot-cumulative_cost img", timeout=60_000)
            assert f"{len(tables.attempts)} attempts" in page.inner_text(".jp-Notebook .mr-status")

            page.click(".jp-Notebook .mr-tabs .lm-TabBar-tab:has-text('Attempts')")
            page.wait_for_function(f"() => document.querySelector('.jp-Notebook .mr-grid-label').textContent.includes('{len(tables.attempts)} attempts')",
                                   timeout=60_000)
            page.wait_for_selector(".jp-Notebook .mr-grid-view tbody tr", timeout=60_000)
            page.select_option(".jp-Notebook .mr-model select", value=model)
            page.wait_for_function(f"() => document.querySelector('.jp-Notebook .mr-grid-label').textContent.includes('{kept} attempts')",
                                   timeout=60_000)
            # the label is Python's; the rows are the page the browser asks for after it, drawn a message later
            page.wait_for_function(f"() => (cells => cells.length > 0 && cells.every(c => c.textContent === {json.dumps(model)}))"
                                   "([...document.querySelectorAll('.jp-Notebook .mr-grid-view tbody tr td:nth-child(3)')])",
                                   timeout=60_000)
            models = page.eval_on_selector_all(".jp-Notebook .mr-grid-view tbody tr td:nth-child(3)", "cells => cells.map(c => c.textContent)")
            assert models and set(models) == {model}

            sizes = page.evaluate(TOO_WIDE)
            assert 600 < sizes["cell"] < 1100, sizes  # a cell narrowed by the file browser
            page.screenshot(path=str(ARTIFACTS / "explore-jupyterlab-attempts.png"))
            assert sizes["wide"] == [] and sizes["scrolling"] == [], sizes
            page.click(".jp-Notebook .mr-tabs .lm-TabBar-tab:has-text('Overview')")
            page.wait_for_selector(".jp-Notebook .mr-summary table", state="visible")
            sizes = page.evaluate(TOO_WIDE)
            page.screenshot(path=str(ARTIFACTS / "explore-jupyterlab-overview.png"))
            assert sizes["wide"] == [] and sizes["scrolling"] == [], sizes
            # The summary of the new filters is drawn on a later turn of the kernel's loop: wait until one is laid out.
            laid_out = ("() => [...document.querySelectorAll('.jp-Notebook .mr-summary .mr-scroll')]"
                        ".filter(e => e.clientWidth > 0).map(e => [e.scrollWidth, e.clientWidth])")
            page.wait_for_function(f"() => ({laid_out})().length > 0", timeout=60_000)
            summary = page.evaluate(laid_out)[0]
            assert summary[0] > summary[1], summary  # the summary is wider than the cell: it scrolls inside itself
        finally:
            page.screenshot(path=str(ARTIFACTS / "explore-jupyterlab.png"))  # as it was left, passed or failed
            browser.close()
    assert errors == [], f"the page reported errors: {errors}"
