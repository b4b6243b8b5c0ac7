"""Benchmark the analysis tables on the tree shapes users keep, against the reader alone and DuckDB.

    python bench/bench_tables.py [--shapes few,mid,large,tiny] [--repeat 2] [--keep | --trees DIR]

Shapes (written under /tmp with `modelrecord.sample.write_tree`, deleted after unless --keep):
- few:   4 large shards, ~180 MB;
- mid:   117 mid-size shards (9 targets x 13 processes), ~175 MB;
- large: 603 shards (9 targets x 67 processes), ~900 MB;
- tiny:  10,000 one-line shards (a run line each).
Each measurement runs in a fresh subprocess, so its peak memory (ru_maxrss) is its own:
- read_shards: `modelrecord.reader.read_shards` alone;
- load_1 / load_2 / load_default: `modelrecord.tables.load(cache=False)` on 1, 2 and the default workers;
- duckdb: `read_json_auto` of the same files into one table, default threads;
- cache_cold / cache_warm: `load()` with an empty cache directory, then again with it filled;
- live_first / live_refresh (tiny only): the explorer's `LiveTree.read`, first and with nothing changed.
Prints wall seconds (best and median of --repeat, interleaved), CPU seconds (best), peak memory, and the ratios the issue
asks about: of the best times (where each target is read), of the medians, and the range of each round's own ratio.
The machine is shared: read the ratios, which are measured in the same run.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = {"few": dict(targets=("ce", "ee"), shards_per_target=2, target_bytes=180_000_000),
          "mid": dict(targets=tuple(f"{e}-{i}" for i in range(5) for e in ("ce", "ee"))[:9], shards_per_target=13, target_bytes=175_000_000),
          "large": dict(targets=tuple(f"{e}-{i}" for i in range(5) for e in ("ce", "ee"))[:9], shards_per_target=67, target_bytes=900_000_000),
          "tiny": dict(targets=("ce", "ee"), shards_per_target=5000, attempts=0)}
MEASURES = ("read_shards", "load_1", "load_2", "load_default", "duckdb", "cache_cold", "cache_warm")
TINY_MEASURES = ("read_shards", "load_1", "load_default", "cache_cold", "cache_warm", "live_first", "live_refresh")
SCALING_MEASURES = ("read_shards", "load_1", "load_2", "cache_warm", "dask_2", "dask_2_read")


def _rss_mb() -> float:
    "The resident memory of this process now, in MB."
    with open("/proc/self/statm") as statm: return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def measure(name: str, tree: str, cache: str) -> dict:
    "Run one measurement in this process; return seconds, CPU seconds and memory figures."
    os.environ["MODELRECORD_CACHE_DIR"] = cache
    import modelrecord.tables, modelrecord.reader  # noqa: F401  (imports are not part of the time)
    import duckdb, pandas  # noqa: F401
    live = None
    if name.startswith("live_"):
        try: from modelrecord.live import LiveTree
        except ImportError: from modelrecord.explore import LiveTree
        live = LiveTree(tree)
        if name == "live_refresh": live.read()
    if name == "cache_warm": modelrecord.tables.load(tree, progress=False)
    base, before = _rss_mb(), resource.getrusage(resource.RUSAGE_CHILDREN)  # the warm-up's workers are not counted
    wall, cpu = time.perf_counter(), time.process_time()
    if name == "read_shards":
        result = modelrecord.reader.read_shards(tree)
    elif name.startswith("load_"):
        workers = None if name == "load_default" else int(name[5:])
        result = modelrecord.tables.load(tree, workers=workers, progress=False, cache=False)
    elif name.startswith("cache_"):
        result = modelrecord.tables.load(tree, progress=False)
    elif live is not None:
        result = live.read()
    elif name in ("dask_2", "dask_2_read"):
        import dask
        import distributed
        from modelrecord.dask import READING_CONFIG, load as load_dask
        wall = time.perf_counter()  # the cluster's start is not part of the time
        settings = READING_CONFIG if name == "dask_2_read" else {}  # the reading settings, or Dask's defaults
        with dask.config.set(settings), distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
            client.run(lambda: __import__("modelrecord.dask"))  # the workers' imports are part of the cluster's start
            wall, cpu = time.perf_counter(), time.process_time()
            tables = load_dask(tree)
            result = client.persist([frame for _, frame in tables.items()])
            distributed.wait(result)
            workers = client.run(lambda: (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                                          resource.getrusage(resource.RUSAGE_SELF).ru_utime))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            del result
        return {"seconds": wall, "cpu": cpu + sum(u for _, u in workers.values()), "base_mb": base,
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
                "children_peak_mb": sum(m for m, _ in workers.values()) / 1e3}
    elif name == "duckdb":
        connection = duckdb.connect()
        connection.execute(f"CREATE TABLE lines AS SELECT * FROM read_json_auto('{tree}/**/modeleval-*.jsonl')")
        result = connection.execute("SELECT count(*) FROM lines").fetchall()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    del result
    children_cpu = children.ru_utime + children.ru_stime - before.ru_utime - before.ru_stime
    return {"seconds": wall, "cpu": cpu + children_cpu, "base_mb": base,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
            "children_peak_mb": children.ru_maxrss / 1e3}


def run(name: str, tree: Path) -> dict:
    "One measurement in a fresh subprocess, with a cache directory of its own."
    with tempfile.TemporaryDirectory(prefix="bench-cache-", dir="/tmp") as cache:
        out = subprocess.run([sys.executable, __file__, "--measure", name, "--tree", str(tree), "--cache", cache],
                             capture_output=True, text=True)
    if out.returncode: raise RuntimeError(f"{name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_shape(shape: str, root: Path) -> Path:
    "Write the tree of `shape` under `root`."
    from modelrecord.sample import write_tree
    start = time.perf_counter()
    tree = write_tree(root / shape, seed=0, **SHAPES[shape])
    print(f"wrote {shape} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return tree


def warm_page_cache(files: list) -> None:
    "Read every file once, so that a tree written earlier is measured from memory, as one just written is."
    for path in files:
        with open(path, "rb") as file:
            while file.read(1 << 24): pass


def report(shape: str, tree: Path, repeat: int) -> dict:
    "Measure every measurement on `tree`, interleaved `repeat` times; print the table and the ratios."
    files = list(tree.rglob("modeleval-*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    warm_page_cache(files)
    names = TINY_MEASURES if shape == "tiny" else MEASURES
    results = {n: [] for n in names}
    load_before = os.getloadavg()[0]
    for _ in range(repeat):
        for name in names: results[name].append(run(name, tree))
    print(f"\n## {shape}: {len(files)} shards, {size / 1e6:.0f} MB (load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after)")
    print(f"{'measurement':<14}{'best s':>8}{'median s':>10}{'cpu s':>8}{'peak MB':>9}{'peak-base MB':>14}{'x tree':>8}"
          f"{'worker MB':>11}")
    best, median = {}, {}
    for name, runs in results.items():
        best[name] = min(r["seconds"] for r in runs)
        median[name] = statistics.median(r["seconds"] for r in runs)
        peak = max(r["peak_mb"] for r in runs)
        grown = max(r["peak_mb"] - r["base_mb"] for r in runs)
        worker = max(r["children_peak_mb"] for r in runs)
        print(f"{name:<14}{best[name]:>8.2f}{median[name]:>10.2f}{min(r['cpu'] for r in runs):>8.2f}{peak:>9.0f}{grown:>14.0f}"
              f"{grown / (size / 1e6):>8.2f}{worker:>11.0f}")
    def ratio(a: str, b: str) -> str:
        ("The ratio of two measurements' best times, of their medians, and the range of the ratios within a round "
         "(the two measured in the same round, seconds apart, so that a slow spell of the machine weighs on both).")
        paired = sorted(x["seconds"] / y["seconds"] for x, y in zip(results[a], results[b]))
        return (f"{best[a] / best[b]:.2f} (median {median[a] / median[b]:.2f}; per round {paired[0]:.2f}-{paired[-1]:.2f}, "
                f"median {statistics.median(paired):.2f})")
    print("ratios of the best wall times (of the medians; of each round's pair), each target read on the best:")
    if shape == "tiny":
        print(f"  load_1 / read_shards       = {ratio('load_1', 'read_shards')}   target <= 3")
        print(f"  load_default / read_shards = {ratio('load_default', 'read_shards')}   target <= 3")
        print(f"  live_first / read_shards   = {ratio('live_first', 'read_shards')}   target <= 3")
        print(f"  live_refresh               = {best['live_refresh']:.3f} s   target <= 0.2 s")
        print(f"  cache_warm                 = {best['cache_warm']:.3f} s   target <= 1 s")
    else:
        print(f"  load_1 / read_shards       = {ratio('load_1', 'read_shards')}   target <= 1.3")
        print(f"  load_default / read_shards = {ratio('load_default', 'read_shards')}   target < 1")
        print(f"  load_2 / load_1            = {ratio('load_2', 'load_1')}   target <= 1 (never slower than one worker)")
        print(f"  duckdb / load_default      = {ratio('duckdb', 'load_default')}   target >= 1.5")
        print(f"  cache_cold / cache_warm    = {ratio('cache_cold', 'cache_warm')}   target >= 10")
        print("  memory: 'x tree' is this process's peak minus its memory before the measurement, over the tree's size "
              "(target <= 1.2);\n          'worker MB' is the peak resident memory of the largest worker process "
              "(it counts the pages it shares with its parent), 0 without workers")
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="few,mid,large,tiny")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the trees (under /tmp/modelrecord-bench-trees)")
    parser.add_argument("--trees", type=Path, help="where the trees are written and kept (a tree already there is reused)")
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--measure", choices=MEASURES + TINY_MEASURES + SCALING_MEASURES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, str(args.tree), args.cache)))
        return
    print(f"cores: {len(os.sched_getaffinity(0))} (shared with other work: compare the ratios, measured in the same run)")
    if args.trees: args.keep = True
    root = args.trees or (Path("/tmp/modelrecord-bench-trees") if args.keep else
                          Path(tempfile.mkdtemp(prefix="bench-trees-", dir="/tmp")))
    try:
        for shape in args.shapes.split(","):
            tree = root / shape if (root / shape).is_dir() else write_shape(shape, root)
            report(shape, tree, args.repeat)
            if not args.keep: shutil.rmtree(tree)
    finally:
        if not args.keep: shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
