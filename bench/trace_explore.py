"""Where the served explorer's page spends a filter click and a row click: Chromium's CPU profile and trace of each.

    python bench/trace_explore.py [--big-attempts 20000] [--clicks 2] [--save DIR]

Serves the benchmark tree of `bench/bench_explore.py` with `modelrecord explore`, opens it in Debian's Chromium
through Playwright, brings the Attempts tab into view and then, for each filter click (a model, then "all") and
each row click, records
- the websocket frames the page received and sent meanwhile (count and bytes: what the comm carried);
- a CPU profile of the page (CDP `Profiler`, 200 us sampling): self time per function, the top ones, and per script;
- a Chromium trace (`browser.start_tracing`): the main thread's time per kind of work (script, style, layout,
  paint, garbage collection, parsing) and its busy time in all.
With `--save DIR` the raw profiles and traces are written there, to open in Chromium's DevTools (Performance tab).
The figures are a lab tool's, printed, not asserted; the lab notes quote them.
"""
import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_explore import ARGS, CHROMIUM, FILTERED, OPENED, big_tree, clicked  # noqa: E402
from processes import explore_server  # noqa: E402

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "blink", "toplevel"]
KINDS = {"script": ("v8.callFunction", "v8.run", "FunctionCall", "EvaluateScript", "v8.compile", "TimerFire",
                    "FireAnimationFrame", "EventDispatch", "v8.evaluateModule", "RunMicrotasks"),
         "style": ("UpdateLayoutTree", "RecalculateStyles", "ScheduleStyleRecalculation"),
         "layout": ("Layout", "UpdateLayerTree", "Layerize", "PrePaint", "LayoutView::HitTest"),
         "paint": ("Paint", "PaintImage", "CompositeLayers"),
         "gc": ("MinorGC", "MajorGC", "V8.GCScavenger", "V8.GCFinalizeMC", "BlinkGC.AtomicPhase"),
         "parse": ("ParseHTML", "ParseAuthorStyleSheet")}


def main_thread(events: list) -> tuple:
    "The (pid, tid) of the page's renderer main thread in a trace."
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    counts = Counter((e["pid"], e["tid"]) for e in events if e.get("name") == "RunTask")
    mains = [thread for thread, name in names.items() if name == "CrRendererMain"]
    return max(mains, key=lambda thread: counts[thread])


def trace_figures(raw: bytes) -> dict:
    "Milliseconds of the main thread's busy time (its tasks), and per kind of work (outermost events of each kind)."
    events = json.loads(raw)["traceEvents"]
    main = main_thread(events)
    mine = sorted((e for e in events if (e["pid"], e["tid"]) == main and e.get("ph") == "X" and "dur" in e),
                  key=lambda e: (e["ts"], -e["dur"]))
    figures = {"busy": sum(e["dur"] for e in mine if e["name"] == "RunTask") / 1000}
    for kind, names in KINDS.items():
        total, until = 0, -1
        for e in mine:  # outermost events of the kind only: nested ones are counted once
            if e["name"] in names and e["ts"] >= until: total += e["dur"]; until = e["ts"] + e["dur"]
        figures[kind] = total / 1000
    longest = max((e for e in mine if e["name"] == "RunTask"), key=lambda e: e["dur"], default=None)
    figures["longest task"] = longest["dur"] / 1000 if longest else 0
    return figures


def profile_figures(profile: dict, top: int) -> tuple:
    "`(per function, per script)`: self milliseconds of the CPU profile, the `top` functions and every script."
    nodes = {node["id"]: node for node in profile["nodes"]}
    gaps = profile["timeDeltas"]
    per_node = defaultdict(float)
    for sample, gap in zip(profile["samples"], gaps[1:] + [0]): per_node[sample] += gap / 1000
    functions, scripts = defaultdict(float), defaultdict(float)
    for node_id, ms in per_node.items():
        frame = nodes[node_id]["callFrame"]
        script = frame["url"].rsplit("/", 1)[-1].split("?")[0] or "(native)"
        functions[f"{frame['functionName'] or '(anonymous)'} {script}:{frame['lineNumber']}:{frame['columnNumber']}"] += ms
        scripts[script] += ms
    ranked = lambda d, n=None: sorted(d.items(), key=lambda kv: -kv[1])[:n]
    return ranked(functions, top), ranked(scripts)


def recorded(browser, page, cdp, frames: list, step, name: str, save: Path | None) -> dict:
    "Run `step()` (which returns `(page seconds, wall seconds)`) under the profiler and the trace; their figures."
    frames.clear()
    cdp.send("Profiler.start")  # before the trace: starting the profiler takes the page a while
    browser.start_tracing(page=page, categories=CATEGORIES)
    shown, wall = step()
    raw = browser.stop_tracing()
    profile = cdp.send("Profiler.stop")["profile"]
    if save:
        (save / f"{name}.cpuprofile").write_text(json.dumps(profile))
        (save / f"{name}.trace.json").write_bytes(raw)
    received = [size for way, size in frames if way == "in"]
    sent = [size for way, size in frames if way == "out"]
    return {"page s": shown, "wall s": wall, "frames in": len(received), "bytes in": sum(received),
            "largest in": max(received, default=0), "frames out": len(sent), "bytes out": sum(sent),
            "trace ms": trace_figures(raw), "profile": profile_figures(profile, 12)}


def report(name: str, found: dict):
    "Print one step's figures."
    trace = ", ".join(f"{kind} {ms:.0f}" for kind, ms in found["trace ms"].items())
    print(f"\n{name}: page {found['page s']:.3f} s, wall {found['wall s']:.3f} s; websocket in {found['frames in']} "
          f"frames {found['bytes in']:,} B (largest {found['largest in']:,} B), out {found['frames out']} frames "
          f"{found['bytes out']:,} B")
    print(f"  main thread (ms): {trace}")
    functions, scripts = found["profile"]
    print("  self time per script (ms): " + ", ".join(f"{script} {ms:.0f}" for script, ms in scripts[:8]))
    for function, ms in functions: print(f"    {ms:7.1f} ms  {function[:110]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--big-attempts", type=int, default=20_000)
    parser.add_argument("--clicks", type=int, default=2)
    parser.add_argument("--save", type=Path, help="write the raw profiles and traces into this folder")
    options = parser.parse_args()
    if options.save: options.save.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright
    from modelrecord.tables import load
    tree = big_tree(options.big_attempts)
    attempts = load(tree, progress=False).attempts
    models = sorted(attempts.model.astype(str).unique())
    print(f"{tree.name}: {len(attempts):,} attempts; load average {os.getloadavg()[0]:.1f}")
    with open(os.devnull, "w") as log, explore_server(log, str(tree), wait=300) as (url, _, _), \
         sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            frames = []
            page.on("websocket", lambda ws: (ws.on("framereceived", lambda data: frames.append(("in", len(data)))),
                                             ws.on("framesent", lambda data: frames.append(("out", len(data))))))
            page.goto(url, timeout=300_000)
            page.wait_for_selector(".mr-summary table", timeout=300_000)
            page.click(".mr-tabs .lm-TabBar-tab:has-text('Attempts')")
            page.wait_for_selector(".mr-grid-view tbody tr td:nth-child(3)", timeout=120_000)
            time.sleep(1)
            cdp = page.context.new_cdp_session(page)
            cdp.send("Profiler.enable"); cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            for i, model in enumerate(models[:options.clicks - 1] + [""]):
                label = f"{int((attempts.model == model).sum()) if model else len(attempts):,} attempt"
                choose = lambda: page.select_option(".mr-model select", **({"value": model} if model else {"label": "all"}))
                step = lambda: clicked(page, "change", choose, FILTERED, [label, model])
                report(f"filter click {i + 1} ({model or 'all'})",
                       recorded(browser, page, cdp, frames, step, f"filter-{i + 1}", options.save))
                time.sleep(1)
            for row in range(1, options.clicks + 1):
                page.click(".mr-tabs .lm-TabBar-tab:has-text('Attempts')")
                page.wait_for_selector(".mr-grid-view tbody tr", state="visible")
                time.sleep(1)
                cell = f".mr-grid-view tbody tr:nth-child({row}) td:first-child"
                name = page.inner_text(cell)
                step = lambda: clicked(page, "mousedown", lambda: page.click(cell, no_wait_after=True, timeout=120_000),
                                       OPENED, name)
                report(f"row click {row}", recorded(browser, page, cdp, frames, step, f"row-{row}", options.save))
        finally:
            browser.close()


if __name__ == "__main__":
    main()
