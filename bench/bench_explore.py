"""Benchmark the served explorer in Chromium: page load, a filter click, a row click; on the example and a 20,000-attempt tree.

    python bench/bench_explore.py [--repeat 3] [--big-attempts 20000] [--no-big]

Serves each tree with `modelrecord explore` (a fresh Voila, so a fresh kernel: its start is part of
the first figure) and drives Debian's Chromium (`/usr/bin/chromium`) through Playwright:
- navigation -> summary visible: from `page.goto` to the Overview's summary table on screen
  (kernel start, imports, reading the tree, the summary and the five plots);
- filter click -> attempts table updated: with the Attempts tab in view, from choosing a model in
  the filter bar to the grid's rows and label showing that model's attempts (each repeat picks
  another model, then "all");
- row click -> conversation: from a click on a grid row to its conversation on screen.
Each browser figure is quoted beside a baseline measured in this process: the same step done by
`Explorer` headless (no browser, no Voila), so the ratio is what the page adds. Targets (issue 9):
summary <= 5 s on the example tree; filter <= 0.3 s (example), <= 1 s (20,000 attempts); row <= 0.2 s.
The 20,000-attempt tree is written once under bench/out/ (git-ignored) with `sample.write_tree`.
"""
import argparse
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TARGETS = {"summary": {"example": 5.0}, "filter": {"example": 0.3, "big": 1.0}, "row": {"example": 0.2, "big": 0.2}}


def big_tree(attempts: int) -> Path:
    "The benchmark tree of `attempts` attempts, written once."
    from modelrecord.sample import write_tree
    tree = HERE / "out" / f"attempts-{attempts}"
    if not tree.exists():
        print(f"writing {tree} ...", file=sys.stderr)
        write_tree(tree, seed=0, attempts=attempts)
    return tree


class Served:
    "`modelrecord explore tree` on a free port, stopped by PID (SIGINT, then its process group) on exit."
    def __init__(self, tree: Path): self.tree = tree

    def __enter__(self):
        command = [sys.executable, "-c", "import sys; from modelrecord.cli import main; sys.exit(main())", "explore", str(self.tree)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.process.stdout], daemon=True).start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try: line = lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None: break
                continue
            if " at http://" in line:
                self.url = line.split(" at ", 1)[1].split()[0]
                return self
        self.__exit__()
        raise SystemExit("modelrecord explore printed no address within 120 s")

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try: self.process.wait(30)
            except subprocess.TimeoutExpired: os.killpg(self.process.pid, signal.SIGKILL); self.process.wait()


def seconds(action, wait) -> float:
    "The wall time of `action()` and then `wait()`."
    started = time.perf_counter()
    action(); wait()
    return time.perf_counter() - started


def in_browser(tree: Path, repeat: int) -> dict:
    "The three figures for `tree`, measured in Chromium on the served page (`repeat` times each; the first load once)."
    from playwright.sync_api import sync_playwright
    from modelrecord.tables import load
    attempts = load(tree, progress=False).attempts
    models = sorted(attempts.model.astype(str).unique())
    found = {"summary": [], "filter": [], "row": []}
    with Served(tree) as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            found["summary"].append(seconds(lambda: page.goto(served.url),
                                            lambda: page.wait_for_selector(".mr-summary table", timeout=300_000)))
            page.click(".mr-tabs .lm-TabBar-tab:has-text('Attempts')")
            page.wait_for_selector(".mr-grid-view tbody tr", timeout=120_000)
            choices = [model for _ in range(repeat) for model in models][:repeat] + [""]
            for model in choices:
                count = int((attempts.model == model).sum()) if model else len(attempts)
                label = f"{count:,} attempt"
                found["filter"].append(seconds(
                    lambda: page.select_option(".mr-model select", **({"value": model} if model else {"label": "all"})),
                    lambda: page.wait_for_function(
                        """([label, model]) => document.querySelector('.mr-grid-label').textContent.includes(label)
                           && (!model || document.querySelector('.mr-grid-view tbody tr td:nth-child(3)').textContent === model)""",
                        arg=[label, model], polling="raf", timeout=120_000)))
            for row in range(1, repeat + 1):
                page.click(".mr-tabs .lm-TabBar-tab:has-text('Attempts')")
                page.wait_for_selector(".mr-grid-view tbody tr", state="visible")
                name = page.inner_text(f".mr-grid-view tbody tr:nth-child({row}) td:first-child")
                found["row"].append(seconds(
                    lambda: page.click(f".mr-grid-view tbody tr:nth-child({row}) td:first-child", no_wait_after=True, timeout=120_000),
                    lambda: page.wait_for_function(
                        "name => { const h = document.querySelector('.mr-conversation h3'); return h && h.textContent.includes(name); }",
                        arg=name, polling="raf", timeout=60_000)))
        finally:
            browser.close()
    return found


def headless(tree: Path, repeat: int) -> dict:
    "The same three steps done by `Explorer` in this process, without a browser: the baseline."
    from modelrecord.explore import Explorer
    found = {"summary": [], "filter": [], "row": []}
    started = time.perf_counter()
    explorer = Explorer(tree)
    found["summary"].append(time.perf_counter() - started)
    explorer.show_tab("Attempts")
    models = [value for _, value in explorer.model.options][1:]
    for model in ([m for _ in range(repeat) for m in models][:repeat] + [""]):
        found["filter"].append(seconds(lambda: setattr(explorer.model, "value", model), lambda: None))
    for row in range(repeat):
        found["row"].append(seconds(lambda: setattr(explorer.grid, "selected_rows", [row]), lambda: None))
        explorer.show_tab("Attempts")
    explorer.close()
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big-attempts", type=int, default=20_000)
    parser.add_argument("--no-big", action="store_true", help="only the example tree")
    options = parser.parse_args()
    from modelrecord.sample import example_tree
    trees = {"example": example_tree()}
    if not options.no_big: trees["big"] = big_tree(options.big_attempts)
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at the start (shared machine: figures vary)")
    for name, tree in trees.items():
        browser, base = in_browser(tree, options.repeat), headless(tree, options.repeat)
        print(f"\n{name} tree ({tree.name}):")
        for step, what in (("summary", "navigation -> summary visible"), ("filter", "filter click -> attempts table updated"),
                           ("row", "row click -> conversation")):
            shown, alone = browser[step], base[step]
            target = TARGETS[step].get(name)
            verdict = "" if target is None else f"  target <= {target:g} s: {'met' if max(shown) <= target else 'SHORT'}"
            print(f"  {what:40s} median {statistics.median(shown):6.3f} s  max {max(shown):6.3f} s  (n={len(shown)})"
                  f"  headless {statistics.median(alone):6.3f} s  ratio {statistics.median(shown) / max(statistics.median(alone), 1e-6):5.1f}x"
                  f"{verdict}")


if __name__ == "__main__":
    main()
