"""Served page benchmark: navigation -> page ready, with one pre-warmed kernel against none.

    python bench/bench_serve.py [--views 3] [--pause 30]

Starts `modelrecord.serve.serve` of the example tree twice in subprocesses, `warm=0` (each view
starts its own kernel, as before pre-warming) and `warm=1` (the default), and opens the page in
headless Chromium (`/usr/bin/chromium`) `--views` times each, leaving it after each view and
pausing `--pause` seconds so that the warm kernel is ready again (a view that comes before the
refill finished waits for it). Ready means the Overview's summary table shows (`.mr-summary table`).
Prints each time and the ratio of the medians; every server is stopped by PID.
"""
import argparse
import queue
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from modelrecord.sample import example_tree  # noqa: E402

READY = ".mr-summary table"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(warm: int):
    "A server of the example tree with `warm` pre-warmed kernels: `(process, url)`."
    code = (f"import sys; from modelrecord.serve import serve; "
            f"sys.exit(serve({str(example_tree())!r}, port={free_port()}, warm={warm}))")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try: line = lines.get(timeout=0.5)
        except queue.Empty: continue
        if " at http://" in line: return process, line.split(" at ", 1)[1].split()[0]
    process.kill()
    raise SystemExit("the server printed no address within 120 s")


def stop(process):
    process.send_signal(signal.SIGINT)
    try: process.wait(30)
    except subprocess.TimeoutExpired: process.kill(); process.wait()


def measure(browser, url: str, views: int, pause: float) -> list:
    "Seconds from navigation to a ready page, for `views` views `pause` seconds apart."
    times = []
    for _ in range(views):
        time.sleep(pause)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        started = time.perf_counter()
        page.goto(url, timeout=180_000)
        page.wait_for_selector(READY, timeout=180_000)
        times.append(time.perf_counter() - started)
        page.goto("about:blank")
        page.close()
    return times


def main():
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--views", type=int, default=3)
    options.add_argument("--pause", type=float, default=30.0)
    args = options.parse_args()
    from playwright.sync_api import sync_playwright
    results = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            for warm in (0, 1):
                process, url = start(warm)
                try: results[warm] = measure(browser, url, args.views, args.pause)
                finally: stop(process)
                print(f"warm={warm}: navigation -> page ready, s: " + " ".join(f"{t:.2f}" for t in results[warm]), flush=True)
        finally:
            browser.close()
    before, after = statistics.median(results[0]), statistics.median(results[1])
    print(f"median: {before:.2f} s without a warm kernel, {after:.2f} s with one: {before / after:.1f}x faster")


if __name__ == "__main__":
    main()
