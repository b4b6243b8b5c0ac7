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
Targets (issue 9): summary <= 5 s on the example tree; filter <= 0.3 s (example), <= 1 s (20,000
attempts); row <= 0.2 s. The 20,000-attempt tree is written once under bench/out/ (git-ignored).
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from processes import explore_server, settled  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TARGETS = {"warm": {"example": 5.0}, "filter": {"example": 0.3, "big": 1.0}, "row": {"example": 0.2, "big": 0.2}}
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
    found = {"first": [], "warm": [], "filter": [], "filter wall": [], "row": [], "row wall": []}
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


def headless(tree: Path, repeat: int) -> dict:
    "The same steps done by `Explorer` in this process, without a browser: the baseline."
    from modelrecord.explore import Explorer
    found = {"first": [], "filter": [], "row": []}
    started = time.perf_counter()
    explorer = Explorer(tree)
    found["first"].append(time.perf_counter() - started)
    found["warm"] = [seconds(explorer.refresh, lambda: None) for _ in range(repeat)]  # what a warm view does on request
    explorer.show_tab("Attempts")
    models = [value for _, value in explorer.model.options][1:]
    for model in ([m for _ in range(repeat) for m in models][:repeat] + [""]):
        found["filter"].append(seconds(lambda: setattr(explorer.model, "value", model), lambda: None))
    for row in range(repeat):
        found["row"].append(seconds(lambda: setattr(explorer.grid, "selected_rows", [row]), lambda: None))
        explorer.show_tab("Attempts")
    explorer.close()
    return found


STEPS = (("first", "navigation -> summary, first view"), ("warm", "navigation -> summary, warm view"),
         ("filter", "filter click -> attempts table (page)"), ("filter wall", "filter click -> attempts table (wall)"),
         ("row", "row click -> conversation (page)"), ("row wall", "row click -> conversation (wall)"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big-attempts", type=int, default=20_000)
    parser.add_argument("--no-big", action="store_true", help="only the example tree")
    parser.add_argument("--no-example", action="store_true", help="only the big tree")
    options = parser.parse_args()
    from modelrecord.sample import example_tree
    trees = {} if options.no_example else {"example": example_tree()}
    if not options.no_big: trees["big"] = big_tree(options.big_attempts)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start "
          "(shared machine: figures vary)")
    for name, tree in trees.items():
        browser, base = in_browser(tree, options.repeat), headless(tree, options.repeat)
        print(f"\n{name} tree ({tree.name}), load average {os.getloadavg()[0]:.1f}:")
        for step, what in STEPS:
            shown, alone = browser[step], base[step.split()[0]]
            target = TARGETS.get(step, {}).get(name)
            met = target is not None and max(shown) <= target
            verdict = "" if target is None else f"  target <= {target:g} s: {'met' if met else 'SHORT'}"
            print(f"  {what:40s} best {min(shown):6.3f} s  median {statistics.median(shown):6.3f} s  "
                  f"max {max(shown):6.3f} s"
                  f"  (n={len(shown)})  headless {statistics.median(alone):6.3f} s{verdict}")
            print(f"  {'':40s} each: {' '.join(f'{s:.3f}' for s in shown)}")


if __name__ == "__main__":
    main()
