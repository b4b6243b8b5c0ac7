"""Benchmark scoring on the ~180 MB benchmark tree (about 20,000 attempts) against loading its tables.

    python bench/bench_score.py [--bytes 180000000] [--repeat 2] [--tree DIR]

The tree is bench/bench_tables.py's (written once by `modelrecord.sample.write_tree` under bench/out/,
git-ignored), with the answer key the generator writes beside it (key.json). Each
measurement runs in a fresh subprocess:
- load: `modelrecord.tables.load(tree, workers=1)`, the tables every summary reads;
- load+content: `load(tree, workers=1, content=True)`, the tables scoring reads (arguments, results,
  texts and facts kept), then `score(tables, key)` in the same process, timed on its own.
Memory: the resident memory the tables hold (after the load, over the interpreter's before it), and
the most that scoring adds on top of them (sampled every 5 ms while it runs). The targets: scoring
takes less time than loading the tables it reads, and adds less memory than they hold.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_tables import _rss_mb, tree_of  # noqa: E402  (the same tree, written the same way)


class _Peak:
    "The highest resident memory seen while the block runs, sampled every 5 ms."
    def __enter__(self):
        self.peak, self.running = _rss_mb(), True
        def sample():
            while self.running:
                self.peak = max(self.peak, _rss_mb())
                time.sleep(0.005)
        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()
        return self
    def __exit__(self, *exc):
        self.running = False
        self.thread.join()
        self.peak = max(self.peak, _rss_mb())


def measure(name: str, tree: str) -> dict:
    "Run one measurement in this process."
    import modelrecord.tables, modelrecord.key, modelrecord.score  # noqa: F401  (imports are not part of the time)
    base = _rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    tables = modelrecord.tables.load(tree, workers=1, content=name == "score", progress=False)
    out = {"load_s": time.perf_counter() - wall, "load_cpu": time.process_time() - cpu, "tables_mb": _rss_mb() - base}
    if name == "score":
        key = modelrecord.key.load_key(Path(tree) / "key.json")
        before = _rss_mb()
        wall, cpu = time.perf_counter(), time.process_time()
        with _Peak() as peak: scores = modelrecord.score.score(tables, key)
        out.update(score_s=time.perf_counter() - wall, score_cpu=time.process_time() - cpu, score_peak_mb=peak.peak - before,
                   score_held_mb=_rss_mb() - before, attempts=len(scores.attempts), steps=len(scores.steps),
                   arguments=len(scores.arguments), calls=len(tables.calls),
                   outcomes=scores.attempts.outcome.value_counts().to_dict())
        wall = time.perf_counter()
        scores.table()
        out["table_s"] = time.perf_counter() - wall
    return out


def run(name: str, tree: Path) -> dict:
    "One measurement in a fresh subprocess."
    done = subprocess.run([sys.executable, __file__, "--measure", name, "--tree", str(tree)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def keyed_tree(size: int, tree: Path = None) -> Path:
    "The benchmark tree of bench_tables.py (written once), which must hold the answer key the generator writes beside it."
    tree = tree_of(size, tree)
    if not (tree / "key.json").exists():
        sys.exit(f"{tree} has no key.json: it was written before the generator wrote answer keys; delete it and run again")
    return tree


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=int, default=180_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--measure", choices=("load", "score"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, str(args.tree))))
        return
    tree = keyed_tree(args.bytes, args.tree)
    size = sum(p.stat().st_size for p in tree.rglob("modeleval-*.jsonl"))
    print(f"tree: {tree} ({size / 1e6:.0f} MB, {len(list(tree.rglob('modeleval-*.jsonl')))} shards)")
    print(f"cores: {len(os.sched_getaffinity(0))}, load average before: {os.getloadavg()[0]:.2f} (the machine is shared)")
    plain, scored = [], []
    for _ in range(args.repeat):  # interleaved, so that a busy moment hurts both alike
        plain.append(run("load", tree))
        scored.append(run("score", tree))
    first = scored[0]
    print(f"attempts {first['attempts']:,}, calls {first['calls']:,}, steps {first['steps']:,}, arguments {first['arguments']:,}")
    print(f"outcomes: {first['outcomes']}")
    best = lambda runs, key: min(r[key] for r in runs)
    print(f"\n{'measurement':<26}{'best s':>8}{'median s':>10}{'cpu s':>8}{'memory MB':>11}")
    rows = [("load (tables)", plain, "load_s", "load_cpu", "tables_mb"), ("load, content=True", scored, "load_s", "load_cpu", "tables_mb"),
            ("score (on those tables)", scored, "score_s", "score_cpu", "score_peak_mb")]
    for label, runs, wall, cpu, memory in rows:
        print(f"{label:<26}{best(runs, wall):>8.2f}{statistics.median(r[wall] for r in runs):>10.2f}{best(runs, cpu):>8.2f}"
              f"{max(r[memory] for r in runs):>11.0f}")
    print(f"{'table() (by model, surface)':<26}{best(scored, 'table_s'):>8.2f}")
    print("\nratios (best wall time; CPU seconds in brackets, steadier on a busy machine):")
    print(f"  score / load with content = {best(scored, 'score_s') / best(scored, 'load_s'):.2f}"
          f" ({best(scored, 'score_cpu') / best(scored, 'load_cpu'):.2f})   target < 1")
    print(f"  score / load without content = {best(scored, 'score_s') / best(plain, 'load_s'):.2f}"
          f" ({best(scored, 'score_cpu') / best(plain, 'load_cpu'):.2f})")
    print(f"  memory scoring adds at its peak / memory the content tables hold = "
          f"{max(r['score_peak_mb'] for r in scored) / min(r['tables_mb'] for r in scored):.2f}   target < 1")
    print(f"  memory the verdicts keep / memory the content tables hold = "
          f"{max(r['score_held_mb'] for r in scored) / min(r['tables_mb'] for r in scored):.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
