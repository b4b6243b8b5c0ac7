"""Benchmark the served explorer in Chromium: page load, a filter click, a row click; example and 20,000-attempt trees.

    python bench/bench_explore.py [--repeat 3] [--big-attempts 20000] [--no-big]

Serves each tree with `modelrecord explore` (a fresh Voila, one kernel kept pre-warmed) and drives
Debian's Chromium (`/usr/bin/chromium`) through Playwright:
- navigation -> summary visible: from `page.goto` to the Overview's summary table on screen.
  "first view" is the page opened as soon as the server prints its address, which it prints once
  the pre-warmed kernel has imported, read the tree and drawn the page (issue 27). "warm view"
  is the page opened once the server's processes went quiet (the pre-warmed kernel is waiting for a
  view), and again after each refill (`--repeat` views): what a person who opens the address gets.
- filter click -> attempts table updated: with the Attempts tab in view, from choosing a model in
  the filter bar to the frame in which the grid's rows and label show that model's attempts (each
  repeat picks another model, then "all");
- row click -> conversation: from a click on a grid row to the frame in which its conversation shows.
The two clicks are timed twice: "page" runs from the input event in the page (the `change` of the
filter's select, the `mousedown` on the row) to the animation frame in which the result is in the
document, by the page's clock; "wall" is Playwright's, from the call that makes the click to the
answer that the result is there, which adds the driver's round trips and its checks that the
element can be clicked (some 30-150 ms on a busy machine). The targets are judged on "page".
Each figure is quoted beside a baseline measured in this process: the same step done by `Explorer`
headless (no browser, no Voila), so the ratio is what the page adds. Every time measured is printed.
- filter click -> Overview (issue 27): with the Overview in view, from choosing a model or an ending
  (each click a selection not seen before) to the frame in which the summary shows it ("summary"),
  and to the frame in which every plot is redrawn for it ("plots"); on the served page and, with
  `--lab`, in a JupyterLab 4 (the notebook `Explorer(tree)` in a 1400 px window).
Targets (issue 9): summary <= 5 s on the example tree; filter <= 0.3 s (example), <= 1 s (20,000
attempts); row <= 0.2 s. The 20,000-attempt tree is written once under bench/out/ (git-ignored).
With `--screenshots DIR`, the served page (the example tree, scored by its key) is photographed at
1400 px: the summary, the Score tab, the tree comparison.
"""
import argparse
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from processes import explore_server, free_port, settled  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TARGETS = {"warm": {"example": 5.0}, "filter": {"example": 0.3, "big": 1.0}, "row": {"example": 0.2, "big": 0.2},
           "overview summary": {"example": 0.3, "big": 1.0}, "lab overview summary": {"example": 0.3, "big": 1.0}}
SUMMARY = ".mr-summary table"

# Before a click: remember, by the page's clock, the first input event of the kind named.
ARM = """kind => { window.__mrStart = null; window.__mrEnd = null;
    document.addEventListener(kind, () => { if (window.__mrStart === null) window.__mrStart = performance.now(); },
                              {capture: true, once: true}); }"""
FILTERED = """([label, model]) => {
    const shown = document.querySelector('.mr-grid-label').textContent.includes(label)
        && (!model || document.querySelector('.mr-grid-view tbody tr td:nth-child(3)').textContent === model);
    if (shown) window.__mrEnd = performance.now();
    return shown; }"""
OPENED = """name => { const h = document.querySelector('.mr-conversation h3');
    const shown = !!h && h.textContent.includes(name);
    if (shown) window.__mrEnd = performance.now();
    return shown; }"""


# Before an Overview click: the summary and the plots as they are, and the first `change` event's time.
ARM_OVERVIEW = """root => { window.__mrStart = window.__mrSummary = window.__mrPlots = null;
    window.__mrBefore = [document.querySelector(root + ' .mr-summary').innerHTML,
        Array.from(document.querySelectorAll(root + ' [class*="mr-plot-"]'), e => (e.querySelector('img') || {}).src)];
    document.addEventListener('change', () => { if (window.__mrStart === null) window.__mrStart = performance.now(); },
                              {capture: true, once: true}); }"""
# The frame the summary changed in, and the frame every plot was redrawn in (not dimmed, a new image).
OVERVIEW = """root => { const now = performance.now();
    if (window.__mrSummary === null && document.querySelector(root + ' .mr-summary').innerHTML !== window.__mrBefore[0])
        window.__mrSummary = now;
    const plots = Array.from(document.querySelectorAll(root + ' [class*="mr-plot-"]'));
    const redrawn = plots.length > 0 && plots.every((e, i) => !e.classList.contains('mr-stale')
        && (e.querySelector('img') || {}).src !== window.__mrBefore[1][i]);
    if (redrawn && window.__mrPlots === null) window.__mrPlots = now;
    return window.__mrSummary !== null && window.__mrPlots !== null; }"""


def overview_clicks(page, root: str, models: list, repeat: int) -> dict:
    "Filter clicks with the Overview in view, each a new selection: seconds to the summary, and to every plot, shown."
    found = {"overview summary": [], "overview plots": [], "overview wall": []}
    for i in range(repeat):
        for choose in (lambda: page.select_option(f"{root} .mr-model select", value=models[i % len(models)]),
                       lambda: page.select_option(f"{root} .mr-endings select", index=[i % 4])):  # completed, over_budget...
            page.evaluate(ARM_OVERVIEW, root)
            wall = seconds(choose, lambda: page.wait_for_function(OVERVIEW, arg=root, polling="raf", timeout=180_000))
            start, summary, plots = page.evaluate("[window.__mrStart, window.__mrSummary, window.__mrPlots]")
            found["overview summary"].append((summary - start) / 1000)
            found["overview plots"].append((plots - start) / 1000)
            found["overview wall"].append(wall)
    page.select_option(f"{root} .mr-endings select", value=[])  # back to every ending (a selection seen before)
    page.select_option(f"{root} .mr-model select", label="all")
    return found


def big_tree(attempts: int) -> Path:
    "The benchmark tree of `attempts` attempts, written once."
    from modelrecord.sample import write_tree
    tree = HERE / "out" / f"attempts-{attempts}"
    if not tree.exists():
        print(f"writing {tree} ...", file=sys.stderr)
        write_tree(tree, seed=0, attempts=attempts)
    return tree


def seconds(action, wait) -> float:
    "The wall time of `action()` and then `wait()`."
    started = time.perf_counter()
    action(); wait()
    return time.perf_counter() - started


def clicked(page, kind: str, action, predicate: str, arg) -> tuple:
    "`(page, wall)`: seconds of `action()` until `predicate(arg)`, from the page's `kind` event, and Playwright's."
    page.evaluate(ARM, kind)
    wall = seconds(action, lambda: page.wait_for_function(predicate, arg=arg, polling="raf", timeout=120_000))
    start, end = page.evaluate("[window.__mrStart, window.__mrEnd]")
    return (end - start) / 1000 if start is not None and end is not None else float("nan"), wall


def view(browser, url: str) -> tuple:
    "A new page of `url`: `(page, seconds from navigation to the summary visible)`."
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    return page, seconds(lambda: page.goto(url, timeout=300_000),
                         lambda: page.wait_for_selector(SUMMARY, timeout=300_000))


def in_browser(tree: Path, repeat: int) -> dict:
    "Every figure for `tree`, measured in Chromium on the served page (`repeat` times each, the first view once)."
    from playwright.sync_api import sync_playwright
    from modelrecord.tables import load
    attempts = load(tree, progress=False).attempts
    models = sorted(attempts.model.astype(str).unique())
    found = {"first": [], "warm": [], "filter": [], "filter wall": [], "row": [], "row wall": [],
             "overview summary": [], "overview plots": [], "overview wall": []}
    with open(os.devnull, "w") as log, explore_server(log, str(tree), wait=300) as (url, process, _), \
         sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page, first = view(browser, url)
            found["first"].append(first)
            page.close()
            for _ in range(repeat):
                settled(process.pid)  # the refilled pool's kernel has read the tree and waits for a view
                page, warm = view(browser, url)
                found["warm"].append(warm)
                if len(found["warm"]) < repeat: page.close()
            page.wait_for_selector(".mr-plot-cumulative_cost img", timeout=120_000)
            for name, figures in overview_clicks(page, "", models, repeat).items(): found[name] += figures
            page.click(".mr-tabs .lm-TabBar-tab:has-text('Attempts')")
            page.wait_for_selector(".mr-grid-view tbody tr td:nth-child(3)", timeout=120_000)
            for model in [model for _ in range(repeat) for model in models][:repeat] + [""]:
                label = f"{int((attempts.model == model).sum()) if model else len(attempts):,} attempt"
                shown, wall = clicked(page, "change", lambda: page.select_option(
                    ".mr-model select", **({"value": model} if model else {"label": "all"})), FILTERED, [label, model])
                found["filter"].append(shown); found["filter wall"].append(wall)
            for row in range(1, repeat + 1):
                page.click(".mr-tabs .lm-TabBar-tab:has-text('Attempts')")
                page.wait_for_selector(".mr-grid-view tbody tr", state="visible")
                cell = f".mr-grid-view tbody tr:nth-child({row}) td:first-child"
                name = page.inner_text(cell)
                shown, wall = clicked(page, "mousedown", lambda: page.click(cell, no_wait_after=True, timeout=120_000),
                                      OPENED, name)
                found["row"].append(shown); found["row wall"].append(wall)
        finally:
            browser.close()
    return found


@contextmanager
def lab_server(tree: Path):
    "JupyterLab on 127.0.0.1 (a free port, a token) serving a scratch directory whose notebook shows `Explorer(tree)`."
    import nbformat
    with tempfile.TemporaryDirectory(prefix="bench-lab-") as scratch, open(os.devnull, "w") as log:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            f"from modelrecord.explore import Explorer\nExplorer({str(tree)!r})")])
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(notebook, Path(scratch, "explorer.ipynb"))
        port, token = free_port(), secrets.token_urlsafe(18)
        env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_CONFIG_DIR": f"{scratch}/.config",
               "JUPYTER_RUNTIME_DIR": f"{scratch}/.runtime"}
        process = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                                    f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
                                    f"--ServerApp.root_dir={scratch}", "--allow-root", "--LabApp.news_url=",
                                    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                                   cwd=scratch, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
                    break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None: raise RuntimeError("no JupyterLab")
                    time.sleep(0.5)
            yield f"http://127.0.0.1:{port}/lab/tree/explorer.ipynb?token={token}"
        finally:
            process.send_signal(signal.SIGTERM)
            try: process.wait(30)
            except subprocess.TimeoutExpired: os.killpg(process.pid, signal.SIGKILL); process.wait()


def in_lab(tree: Path, repeat: int) -> dict:
    "The Overview's filter clicks in a JupyterLab 4 in Chromium (1400 px, the file browser shut): `overview_clicks`."
    from playwright.sync_api import sync_playwright
    from modelrecord.tables import load
    models = sorted(load(tree, progress=False).attempts.model.astype(str).unique())
    with lab_server(tree) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url, timeout=300_000)
            page.wait_for_function("() => document.querySelector('#jp-main-statusbar')"
                                   " && document.querySelector('#jp-main-statusbar').innerText.includes('| Idle')",
                                   timeout=300_000)
            page.click(".jp-Notebook .jp-Cell .jp-InputArea-editor")
            page.keyboard.press("Shift+Enter")
            page.wait_for_selector(".jp-Notebook .mr-summary table", timeout=600_000)
            page.wait_for_selector(".jp-Notebook .mr-plot-cumulative_cost img", timeout=600_000)
            found = overview_clicks(page, ".jp-Notebook", models, repeat)
        finally:
            browser.close()
    return {f"lab {name}": figures for name, figures in found.items()}


def screenshots(folder: Path):
    "At 1400 px: the served example's summary and Score tab (scored by its key), and runs/after against runs/before."
    from playwright.sync_api import sync_playwright
    from modelrecord.sample import example_tree
    folder.mkdir(parents=True, exist_ok=True)
    runs = example_tree().parent / "runs"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS,
                                             ignore_default_args=["--hide-scrollbars"])  # scrollbars drawn, as on screen
        try:
            with open(os.devnull, "w") as log, explore_server(log, wait=300) as (url, _, _):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url, timeout=300_000)
                page.wait_for_selector(SUMMARY, timeout=300_000)
                page.screenshot(path=str(folder / "summary-1400.png"))
                page.click(".mr-tabs .lm-TabBar-tab:has-text('Score')")
                page.wait_for_selector(".mr-score-view table", timeout=120_000)
                page.screenshot(path=str(folder / "score-1400.png"))
            with open(os.devnull, "w") as log, explore_server(log, str(runs / "after"), "--allow-any-path",
                                                             wait=300) as (url, _, _):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url, timeout=300_000)
                page.wait_for_selector(SUMMARY, timeout=300_000)
                page.click(".mr-tabs .lm-TabBar-tab:has-text('Compare')")
                page.click(".mr-compare-mode button:has-text('this tree against another')")
                page.fill(".mr-compare-path input", str(runs / "before"))
                page.click(".mr-compare-button")
                page.wait_for_selector(".mr-compare-view table", timeout=120_000)
                page.screenshot(path=str(folder / "compare-trees-1400.png"))
        finally:
            browser.close()


def headless(tree: Path, repeat: int) -> dict:
    "The same steps done by `Explorer` in this process, without a browser: the baseline."
    from modelrecord.explore import Explorer
    found = {"first": [], "filter": [], "row": []}
    started = time.perf_counter()
    explorer = Explorer(tree)
    found["first"].append(time.perf_counter() - started)
    found["warm"] = [seconds(explorer.refresh, lambda: None) for _ in range(repeat)]  # what a warm view does on request
    models = [value for _, value in explorer.model.options][1:]
    found.update(overview_headless(explorer, models, repeat))
    explorer.show_tab("Attempts")
    for model in ([m for _ in range(repeat) for m in models][:repeat] + [""]):
        found["filter"].append(seconds(lambda: setattr(explorer.model, "value", model), lambda: None))
    for row in range(repeat):
        found["row"].append(seconds(lambda: setattr(explorer.grid, "selected_rows", [row]), lambda: None))
        explorer.show_tab("Attempts")
    explorer.close()
    return found


def overview_headless(explorer, models: list, repeat: int) -> dict:
    "The Overview's clicks done by `Explorer` in an event loop (as a kernel runs them): to the summary, to every plot."
    import asyncio
    found = {"overview summary": [], "overview plots": []}
    endings = ["completed", "over_budget", "malformed", "no_tool_call"]
    async def clicks():
        for i in range(repeat):
            for widget, value in ((explorer.model, models[i % len(models)]), (explorer.endings, (endings[i % 4],))):
                started = time.perf_counter()
                widget.value = value
                found["overview summary"].append(time.perf_counter() - started)
                explorer.draw_now()
                found["overview plots"].append(time.perf_counter() - started)
    asyncio.run(clicks())
    explorer.clear()
    return found


STEPS = (("first", "navigation -> summary, first view"), ("warm", "navigation -> summary, warm view"),
         ("filter", "filter click -> attempts table (page)"), ("filter wall", "filter click -> attempts table (wall)"),
         ("row", "row click -> conversation (page)"), ("row wall", "row click -> conversation (wall)"),
         ("overview summary", "filter click -> Overview summary (page)"),
         ("overview plots", "filter click -> Overview plots (page)"),
         ("overview wall", "filter click -> Overview all (wall)"),
         ("lab overview summary", "JupyterLab: filter -> summary (page)"),
         ("lab overview plots", "JupyterLab: filter -> plots (page)"),
         ("lab overview wall", "JupyterLab: filter -> all (wall)"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big-attempts", type=int, default=20_000)
    parser.add_argument("--no-big", action="store_true", help="only the example tree")
    parser.add_argument("--no-example", action="store_true", help="only the big tree")
    parser.add_argument("--lab", action="store_true", help="also the Overview's clicks in JupyterLab")
    parser.add_argument("--screenshots", type=Path, help="photograph the wide tables at 1400 px into this folder")
    options = parser.parse_args()
    from modelrecord.sample import example_tree
    trees = {} if options.no_example else {"example": example_tree()}
    if not options.no_big: trees["big"] = big_tree(options.big_attempts)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start "
          "(shared machine: figures vary)")
    if options.screenshots: screenshots(options.screenshots)
    for name, tree in trees.items():
        browser, base = in_browser(tree, options.repeat), headless(tree, options.repeat)
        if options.lab: browser.update(in_lab(tree, options.repeat))
        print(f"\n{name} tree ({tree.name}), load average {os.getloadavg()[0]:.1f}:")
        for step, what in STEPS:
            if not browser.get(step): continue
            shown = browser[step]
            alone = base.get(step.removeprefix("lab ").removesuffix(" wall"), base.get(step.split()[0], [float("nan")]))
            target = TARGETS.get(step, {}).get(name)
            met = target is not None and max(shown) <= target
            verdict = "" if target is None else f"  target <= {target:g} s: {'met' if met else 'SHORT'}"
            print(f"  {what:40s} best {min(shown):6.3f} s  median {statistics.median(shown):6.3f} s  "
                  f"max {max(shown):6.3f} s"
                  f"  (n={len(shown)})  headless {statistics.median(alone):6.3f} s{verdict}")
            print(f"  {'':40s} each: {' '.join(f'{s:.3f}' for s in shown)}")


if __name__ == "__main__":
    main()
