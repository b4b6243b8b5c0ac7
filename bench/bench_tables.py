"""Benchmark the analysis tables on a ~180 MB shard tree, against the reader alone and DuckDB.

    python bench/bench_tables.py [--bytes 180000000] [--repeat 3] [--tree DIR] [--with-pandas]

Writes the tree once with `modelrecord.sample.write_tree` under bench/out/ (git-ignored) and reuses
it. Each measurement runs in a fresh subprocess, so its peak memory (ru_maxrss) is its own:
- read_shards: `modelrecord.reader.read_shards` alone (every shard kept as objects);
- load (1 worker) / load (2 workers): `modelrecord.tables.load`, all tables built;
- duckdb: `read_json_auto` of the same files into one table, 2 threads;
- pandas.read_json (with --with-pandas): `read_json(lines=True)` per file, concatenated.
Prints wall and CPU seconds (best of --repeat), peak memory, and the ratios the issue asks about.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEASURES = ("read_shards", "load_1", "load_2", "duckdb", "pandas")


def _rss_mb() -> float:
    "The resident memory of this process now, in MB."
    with open("/proc/self/statm") as statm: return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def measure(name: str, tree: str) -> dict:
    "Run one measurement in this process; return seconds, CPU seconds and memory figures."
    import modelrecord.tables, modelrecord.reader  # noqa: F401  (imports are not part of the time)
    import duckdb, pandas  # noqa: F401
    base = _rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    if name == "read_shards":
        result = modelrecord.reader.read_shards(tree)
    elif name.startswith("load_"):
        result = modelrecord.tables.load(tree, workers=int(name[5:]), progress=False)
    elif name == "duckdb":
        connection = duckdb.connect()
        connection.execute("SET threads = 2")
        connection.execute(f"CREATE TABLE lines AS SELECT * FROM read_json_auto('{tree}/**/modeleval-*.jsonl')")
        result = connection.execute("SELECT count(*) FROM lines").fetchall()
    elif name == "pandas":
        from modelrecord.reader import shard_paths
        result = pandas.concat([pandas.read_json(p, lines=True) for p in shard_paths(tree)])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"seconds": wall, "cpu": cpu + children.ru_utime + children.ru_stime, "base_mb": base,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
            "children_peak_mb": children.ru_maxrss / 1e3, "held_mb": _rss_mb() - base}


def run(name: str, tree: Path) -> dict:
    "One measurement in a fresh subprocess."
    out = subprocess.run([sys.executable, __file__, "--measure", name, "--tree", str(tree)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def tree_of(size: int, tree: Path = None) -> Path:
    "The benchmark tree of about `size` bytes, written once."
    from modelrecord.sample import write_tree
    tree = tree or HERE / "out" / f"tables-{size // 1_000_000}mb"
    if not any(tree.rglob("modeleval-*.jsonl")):
        start = time.perf_counter()
        write_tree(tree, seed=0, target_bytes=size)
        print(f"wrote {tree} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return tree


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=int, default=180_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--with-pandas", action="store_true")
    parser.add_argument("--measure", choices=MEASURES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, str(args.tree))))
        return
    tree = tree_of(args.bytes, args.tree)
    size = sum(p.stat().st_size for p in tree.rglob("modeleval-*.jsonl"))
    from modelrecord.tables import load
    tables = load(tree, progress=False)
    print(f"tree: {tree} ({size / 1e6:.0f} MB, {len(list(tree.rglob('modeleval-*.jsonl')))} shards)")
    print(f"tables: {tables}")
    print(f"cores: {len(os.sched_getaffinity(0))}, load average before: {os.getloadavg()[0]:.2f}")
    names = [n for n in MEASURES if n != "pandas" or args.with_pandas]
    results = {n: [] for n in names}
    for _ in range(args.repeat):  # interleaved, so a busy moment hurts every measurement alike
        for name in names: results[name].append(run(name, tree))
    print(f"\n{'measurement':<14}{'best s':>8}{'median s':>10}{'cpu s':>8}{'peak MB':>9}{'peak-base MB':>14}{'x tree':>8}")
    best = {}
    for name, runs in results.items():
        best[name] = min(r["seconds"] for r in runs)
        peak = max(max(r["peak_mb"], r["children_peak_mb"]) for r in runs)
        grown = max(r["peak_mb"] - r["base_mb"] for r in runs)
        cpu = min(r["cpu"] for r in runs)
        print(f"{name:<14}{best[name]:>8.2f}{statistics.median(r['seconds'] for r in runs):>10.2f}{cpu:>8.2f}"
              f"{peak:>9.0f}{grown:>14.0f}{grown / (size / 1e6):>8.2f}")
    cpu = {name: min(r["cpu"] for r in runs) for name, runs in results.items()}
    print("\nratios, best wall time (and CPU seconds, all processes; steadier on a busy machine):")
    for name in ("load_1", "load_2"):
        print(f"  {name} / read_shards = {best[name] / best['read_shards']:.2f} ({cpu[name] / cpu['read_shards']:.2f})"
              f"   target <= 1.5;   {name} / duckdb = {best[name] / best['duckdb']:.2f}   target < 1")
    print("  memory: 'x tree' is peak minus the interpreter's memory before the measurement, over the tree's size (target <= 2)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
