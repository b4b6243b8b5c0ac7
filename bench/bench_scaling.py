"""How the cost of reading a tree grows with its size: trees of about 0.2, 1 and 4 GB, generated, measured, deleted.

    python bench/bench_scaling.py [--sizes 0.2,1,4] [--repeat 1] [--trees DIR] [--write-only] [--measures a,b]
    python bench/bench_scaling.py --big-shard 400 [--repeat 3] [--trees DIR]
    python bench/bench_scaling.py --s3 100,400 [--repeat 3]

Each tree is written with `modelrecord.sample.write_tree` under /tmp: 9 targets of shards of about
1.5 MB (as many processes as the size needs). Measured each in a fresh subprocess, so that its peak
memory (ru_maxrss) is its own:
- read_shards, load_1, load_2, cache_warm, dask_2: as in bench_tables.py (`read_shards`; `load()`
  on 1 and 2 workers, no cache; a cached `load()`, the cache filled first; the Dask load on a
  LocalCluster of 2 worker processes, every table persisted on the workers, their peaks summed);
- summary_2: `load()` on 2 workers and `summary()` in memory, the baseline of
- dask_summary_2: `modelrecord.dask.load` and `modelrecord.dask.summary` on the same 2-process
  cluster (the cluster's start and its workers' imports are not timed);
- score_2 / dask_score_2: the same for the score table (`load(content=True)` and `score().table()`
  against `modelrecord.dask.score_table`), against the tree's answer key;
- dask_2_read, dask_summary_2_read, dask_score_2_read: the three Dask measurements on a cluster
  started under `modelrecord.dask.READING_CONFIG` (no stack sampling, no 64 KB malloc trimming).
`--s3 MB,MB`: the tree in moto's S3 server at each size, by bench_remote.py (local, S3 cold, S3
cached, local cached, best of --repeat), and whether each grows linearly from the smallest size.
With --repeat N, N rounds of every measurement one after the other (not N of one, then N of the
next), the best of each kept, so that a slow spell of the shared machine does not fall on one alone.
`--big-shard MB`: a tree of one shard of about MB megabytes, `load(cache=False)` on 1 worker and on 2
(the shard read in spans), interleaved in this process for --repeat rounds, first untimed (the figure
to judge the goal by: the phase timers below slow the 2-worker load more than the 1-worker one), then
with the phase timers: each round's ratio, the
ratio of the best times, and whether the tables are identical; each load's phases (`_Phases`: start,
reading in this process and in the worker, hand-back, waiting for the worker, join, combine, in wall
and CPU seconds), and this process's CPU seconds, the 2-worker load's critical path, whose ratio
still means something on a shared machine, where the wall-clock one does not (the scheduler groups
a session's processes, so a pool gets no more of a busy machine than one process); then the same
shard through `modelrecord.dask.load` (read in spans, every table persisted) on a LocalCluster of
1 worker process and of 2, best of --repeat each.
For each measurement: seconds, CPU seconds and peak MB per size, seconds per GB, and whether it
grows linearly (seconds per GB at the largest size within 1.5x of the smallest's, the same for peak
memory per GB). Then the Dask ratios per size. The machine is shared: compare within a run.
`--trees DIR` keeps the trees in DIR (a tree already there is reused), so that they can be written
ahead (`--write-only`) and measured later on a quiet machine; each tree's files are read once
before it is measured, so that the first measurement does not pay for reading them from disk.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tables import SCALING_MEASURES, run as run_tables, warm_page_cache  # noqa: E402

SUMMARY_MEASURES = ("summary_2", "dask_summary_2", "dask_summary_2_read", "score_2", "dask_score_2", "dask_score_2_read")  # measured here; the others by bench_tables.py
MEASURES = SCALING_MEASURES + SUMMARY_MEASURES
TARGETS = tuple(f"{e}-{i}" for i in range(5) for e in ("ce", "ee"))[:9]
SHARD_BYTES = 1_500_000


def write(size_gb: float, root: Path) -> Path:
    "A tree of about `size_gb` GB in shards of about 1.5 MB."
    from modelrecord.sample import write_tree
    total = int(size_gb * 1e9)
    per_target = max(1, round(total / SHARD_BYTES / len(TARGETS)))
    start = time.perf_counter()
    tree = write_tree(root / f"{size_gb}gb", seed=0, targets=TARGETS, shards_per_target=per_target, target_bytes=total)
    print(f"wrote {size_gb} GB ({per_target * len(TARGETS)} shards) in {time.perf_counter() - start:.0f} s",
          file=sys.stderr, flush=True)
    return tree


def measure(name: str, tree: str) -> dict:
    "Run one summary measurement in this process; return seconds, CPU seconds and memory figures."
    import dask
    import distributed
    import modelrecord.dask
    import modelrecord.summary
    import modelrecord.score
    import modelrecord.tables  # noqa: F401  (imports are not part of the time)
    key = Path(tree) / "key.json"
    if name in ("summary_2", "score_2"):
        wall, cpu = time.perf_counter(), time.process_time()
        if name == "summary_2":
            modelrecord.summary.summary(modelrecord.tables.load(tree, workers=2, progress=False, cache=False))
        else:
            modelrecord.score.score(modelrecord.tables.load(tree, workers=2, progress=False, cache=False, content=True), key).table()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"seconds": wall, "cpu": cpu + children.ru_utime + children.ru_stime,
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, "children_peak_mb": children.ru_maxrss / 1e3}
    settings = modelrecord.dask.READING_CONFIG if name.endswith("_read") else {}  # the reading settings, or the defaults
    with dask.config.set(settings), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        client.run(lambda: __import__("modelrecord.dask"))  # the workers' imports are part of the cluster's start
        wall, cpu = time.perf_counter(), time.process_time()
        if name.startswith("dask_summary_2"): modelrecord.dask.summary(modelrecord.dask.load(tree))
        else: modelrecord.dask.score_table(modelrecord.dask.load(tree, content=True), key)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        workers = client.run(lambda: (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                                      resource.getrusage(resource.RUSAGE_SELF).ru_utime))
    return {"seconds": wall, "cpu": cpu + sum(u for _, u in workers.values()),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
            "children_peak_mb": sum(m for m, _ in workers.values()) / 1e3}


def run(name: str, tree: Path) -> dict:
    "One measurement in a fresh subprocess."
    if name not in SUMMARY_MEASURES: return run_tables(name, tree)
    out = subprocess.run([sys.executable, __file__, "--measure", name, "--tree", str(tree)], capture_output=True, text=True)
    if out.returncode: raise RuntimeError(f"{name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# the functions of modelrecord.tables whose calls `_phases` times (in this process and in forked workers)
_TIMED = ("_read_columns", "_part", "combine", "_span_lines", "_pooled_span", "_write_segment", "_received", "_spans_part")


class _Phases:
    "Time the calls of `_TIMED` during a load: wall and this thread's CPU seconds, in this process and in the workers."
    def __init__(self, module, path: Path):
        self.module, self.path = module, path  # the one shard loaded
        self.log = Path(tempfile.mkstemp(prefix="bench-phases-", suffix=".jsonl")[1])
        self.originals = {name: getattr(module, name) for name in _TIMED}

    def _timed(self, name: str, function):
        import functools
        log = self.log
        @functools.wraps(function)  # the same name: a worker unpickles `_pooled_span` by it
        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try: return function(*args, **kwargs)
            finally:
                span = args[1] if name == "_span_lines" else None  # the bytes a span read: (start, stop or None)
                with open(log, "a") as out:
                    out.write(json.dumps([os.getpid(), name, wall, time.perf_counter(), time.thread_time() - cpu,
                                          span and [span.start, span.stop]]) + "\n")
        return timed

    def __enter__(self):
        self.log.write_text("")
        for name, function in self.originals.items(): setattr(self.module, name, self._timed(name, function))
        self.start = time.perf_counter()
        return self

    def __exit__(self, *_):
        self.end = time.perf_counter()
        for name, function in self.originals.items(): setattr(self.module, name, function)

    def figures(self) -> dict:
        "Phase -> seconds (wall; `cpu` ones in CPU seconds) of the load timed: start, read, hand-back, wait, join, combine."
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        self.log.unlink()
        me = os.getpid()
        def total(name, own=True, field=3):
            picked = [c for c in calls if c[1] == name and (c[0] == me) == own]
            return sum((c[3] - c[2]) if field == 3 else c[4] for c in picked), picked
        joined = "_spans_part" if any(c[1] == "_spans_part" for c in calls) else "_part"
        read_name = "_span_lines" if joined == "_spans_part" else "_read_columns"
        parent_read, parent_calls = total(read_name)
        worker_read, worker_calls = total(read_name, own=False)
        join_wall, join_calls = total(joined)
        combine_wall, combine_calls = total("combine")
        figures = {"total": self.end - self.start,
                   "start": min((c[2] for c in parent_calls), default=self.start) - self.start,
                   "read (this process)": parent_read, "read cpu (this process)": total(read_name, field=4)[0],
                   "read (workers)": worker_read, "read cpu (workers)": total(read_name, own=False, field=4)[0],
                   "hand-back (workers write)": total("_write_segment", own=False)[0],
                   "hand-back (this process maps)": total("_received")[0],
                   "join": join_wall, "join cpu": total(joined, field=4)[0],
                   "combine": combine_wall, "combine cpu": total("combine", field=4)[0]}
        if joined == "_spans_part":  # the bytes this process read, of the shard's
            size = os.path.getsize(self.path)
            figures["share read here"] = sum((stop or size) - start for start, stop in (c[5] for c in parent_calls)) / size
        if worker_calls and join_calls:  # from this process's last read to the join: waiting for the workers
            figures["wait"] = max(join_calls[0][2] - max(c[3] for c in parent_calls) - figures["hand-back (this process maps)"], 0)
            figures["worker starts"] = min(c[2] for c in worker_calls) - self.start
            figures["workers end"] = max(c[3] for c in calls if c[0] != me) - self.start
        figures["other"] = figures["total"] - sum(figures.get(k, 0) for k in ("start", "read (this process)", "wait",
                                                                                "hand-back (this process maps)", "join", "combine"))
        return figures


def _slowdown(one: dict, two: dict) -> float:
    ("How much slower this process read a byte beside the worker (2 workers) than alone (1 worker): 1 when running "
     "beside it costs nothing; what it costs on a quiet machine is the hardware's (shared caches, memory, host).")
    return (two["read (this process)"] / two["share read here"]) / one["read (this process)"]


def _phase_line(figures: dict) -> str:
    "The phases of one load, on one line."
    line = ", ".join(f"{name} {seconds:.2f}" for name, seconds in figures.items() if name not in ("total", "share read here"))
    return line + (f"; this process read {figures['share read here']:.0%} of the bytes" if "share read here" in figures else "")


def big_shard(root: Path, mb: int, repeat: int):
    "One shard of about `mb` MB: load() on 1 worker against 2, interleaved, in this process; the phases of each load."
    import pandas as pd
    import modelrecord.tables
    from modelrecord.sample import write_tree
    from modelrecord.tables import load
    tree = root / f"one-shard-{mb}mb"
    if not tree.is_dir(): write_tree(tree, seed=0, targets=("ce",), shards_per_target=1, target_bytes=mb * 1_000_000)
    shards = list(tree.rglob("modeleval-*.jsonl"))
    warm_page_cache(shards)
    print(f"one shard of {shards[0].stat().st_size / 1e6:.0f} MB; cores {len(os.sched_getaffinity(0))}, "
          f"load average (1 min) before {os.getloadavg()[0]:.1f}")
    times, cpu, reference, slowdowns = {1: [], 2: []}, {1: [], 2: []}, None, []
    untimed = {1: [], 2: []}  # the same loads without the phase timers, which cost the 2-worker load more
    for round in range(repeat):
        for workers in (1, 2):
            start = time.perf_counter()
            tables = load(tree, workers=workers, cache=False, progress=False)
            untimed[workers].append(time.perf_counter() - start)
            del tables
        print(f"  round {round + 1}, untimed: 1 worker {untimed[1][-1]:.2f} s, 2 workers {untimed[2][-1]:.2f} s, "
              f"ratio {untimed[2][-1] / untimed[1][-1]:.2f}", flush=True)
        phase = {}
        for workers in (1, 2):
            with _Phases(modelrecord.tables, shards[0]) as phases:
                cpu_start = time.process_time()
                tables = load(tree, workers=workers, cache=False, progress=False)
            times[workers].append(phases.end - phases.start)
            cpu[workers].append(time.process_time() - cpu_start)
            figures = phase[workers] = phases.figures()
            print(f"    {workers} worker{'s' if workers > 1 else ''}: {times[workers][-1]:.2f} s, this process "
                  f"{cpu[workers][-1]:.2f} CPU s; phases (s): {_phase_line(figures)}", flush=True)
            if reference is None: reference = tables
            else:
                for name, frame in tables.items(): pd.testing.assert_frame_equal(frame, reference[name], check_exact=True)
            del tables
        slowdowns.append(_slowdown(phase[1], phase[2]))
        print(f"  round {round + 1}: 1 worker {times[1][-1]:.2f} s, 2 workers {times[2][-1]:.2f} s, "
              f"ratio {times[2][-1] / times[1][-1]:.2f}; a byte read beside the worker took {slowdowns[-1]:.2f}x "
              f"its time alone; load average (1 min) {os.getloadavg()[0]:.1f}", flush=True)
    print(f"best: 1 worker {min(times[1]):.2f} s, 2 workers {min(times[2]):.2f} s, ratio of the best "
          f"{min(times[2]) / min(times[1]):.2f} (goal <= 0.7); tables identical; load average after {os.getloadavg()[0]:.1f}")
    print(f"untimed (no phase timers), best: 1 worker {min(untimed[1]):.2f} s, 2 workers {min(untimed[2]):.2f} s, "
          f"ratio of the best {min(untimed[2]) / min(untimed[1]):.2f} (goal <= 0.7)")
    print(f"a byte read beside the worker took {sorted(slowdowns)[len(slowdowns) // 2]:.2f}x its time alone (median of "
          "the rounds; the share of the 2-worker time that is the hardware's, not the code's)")
    print(f"this process's CPU seconds (the 2-worker load's critical path when the machine is shared), best: 1 worker "
          f"{min(cpu[1]):.2f}, 2 workers {min(cpu[2]):.2f}, ratio {min(cpu[2]) / min(cpu[1]):.2f}")
    dask_big_shard(tree, repeat)


def dask_big_shard(tree: Path, repeat: int):
    "The same shard through `modelrecord.dask.load`, every table persisted, on a cluster of 1 worker process and of 2."
    import distributed
    from modelrecord.dask import load as load_dask
    times = {}
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
            client.run(lambda: __import__("modelrecord.dask"))  # the workers' imports are part of the cluster's start
            for _ in range(repeat):
                start = time.perf_counter()
                tables = load_dask(tree)
                distributed.wait(client.persist([frame for _, frame in tables.items()]))
                times.setdefault(workers, []).append(time.perf_counter() - start)
        spans = sum(str(key).startswith("_span_lines") for key in dict(tables.turns.__dask_graph__()))
        print(f"  Dask, {workers} worker(s): {len(tables.batches)} batch, {spans} span tasks, "
              f"{tables.turns.npartitions} partitions a table; best of {repeat} {min(times[workers]):.1f} s", flush=True)
    print(f"Dask persisted, best: 1 worker {min(times[1]):.1f} s, 2 workers {min(times[2]):.1f} s, ratio "
          f"{min(times[2]) / min(times[1]):.2f}; load average after {os.getloadavg()[0]:.1f}")


def report(rows: dict, loads: dict):
    "Print the scaling table and the Dask ratios."
    sizes = sorted({size for size, _ in rows})
    print(f"cores: {len(os.sched_getaffinity(0))}, shared with other work; load average (1 min) before/after each size: "
          + ", ".join(f"{s} GB {a:.1f}/{b:.1f}" for s, (a, b) in loads.items()))
    tree = {size: next(row for (s, _), row in rows.items() if s == size) for size in sizes}
    print("trees: " + ", ".join(f"{size} GB = {tree[size][0]:.2f} GB in {tree[size][1]} shards" for size in sizes))
    print(f"{'measurement':<20}" + "".join(f"{f'{s} GB: s':>11}{'cpu s':>8}{'peak MB':>9}{'s/GB':>7}" for s in sizes) + "  linear?")
    for name in [m for m in MEASURES if all((size, m) in rows for size in sizes)]:
        line, per_gb, per_gb_mem = f"{name:<20}", [], []
        for size in sizes:
            gb, shards, seconds, cpu, peak = rows[(size, name)]
            per_gb.append(seconds / gb)
            per_gb_mem.append(peak / gb)
            line += f"{seconds:>11.1f}{cpu:>8.1f}{peak:>9.0f}{seconds / gb:>7.1f}"
        if len(sizes) < 2:  # growth needs two sizes at least
            print(line + "  one size: growth not measured (give --sizes with two or more)")
            continue
        time_linear = per_gb[-1] <= 1.5 * per_gb[0]
        memory = ("memory linear" if per_gb_mem[-1] <= 1.5 * per_gb_mem[0] else "memory grows faster") if name != "cache_warm" else \
            f"memory {'linear' if per_gb_mem[-1] <= 1.5 * per_gb_mem[0] else 'grows faster'} (mapped)"
        print(line + f"  time {'linear' if time_linear else 'grows faster'} ({per_gb[-1] / per_gb[0]:.2f}x s/GB, "
              f"{sizes[-1]} GB against {sizes[0]} GB), {memory}")
    print("Dask on 2 worker processes against load() on 2 workers, same run (goals: persisted <= 1.5, summary and "
          "score <= 1.2):")
    pairs = (("dask load (all tables persisted) / load_2", "dask_2", "load_2"),
             ("dask load+summary / load+summary", "dask_summary_2", "summary_2"),
             ("dask load+score table / load+score table", "dask_score_2", "score_2"),
             ("the same on a cluster started with READING_CONFIG: persisted", "dask_2_read", "load_2"),
             ("summary", "dask_summary_2_read", "summary_2"),
             ("score table", "dask_score_2_read", "score_2"))
    ratios = {}
    for size in sizes:
        t = {name: rows[(size, name)][2] for name in MEASURES if (size, name) in rows}
        ratios[size] = {what: t[a] / t[b] for what, a, b in pairs if a in t and b in t}
        print(f"  {size} GB: " + ", ".join(f"{what} = {ratio:.2f}" for what, ratio in ratios[size].items()))
    if len(sizes) > 1:  # a ratio that stays put: the Dask figure grows as linearly as the figure it is compared to
        first, last = ratios[sizes[0]], ratios[sizes[-1]]
        print("  ratio from the smallest size to the largest: " + ", ".join(
            f"{what} {first[what]:.2f} -> {last[what]:.2f}" for what in first if what in last))


def s3_tree(sizes_mb: list, repeat: int):
    "The S3 tree at each size: bench_remote.py's figures (local, S3 cold, S3 cached, local cached) and their growth."
    seconds = {}
    for mb in sizes_mb:
        out = subprocess.run([sys.executable, str(Path(__file__).with_name("bench_remote.py")), "--size-mb", str(mb),
                              "--repeat", str(repeat)], capture_output=True, text=True)
        if out.returncode: raise RuntimeError(f"bench_remote.py failed:\n{out.stderr[-3000:]}")
        print(f"{mb:g} MB: {out.stdout.strip()}", flush=True)
        lines = [line.split() for line in out.stdout.splitlines()[1:] if line.strip()]
        seconds[mb] = {words[0]: float(words[1]) for words in lines}
    if len(sizes_mb) > 1:  # linear: seconds per MB at the largest size within 1.5x of the smallest's
        first, last = sizes_mb[0], sizes_mb[-1]
        print("growth, s/MB at the largest size over the smallest: " + ", ".join(
            f"{name} {seconds[last][name] / last / (seconds[first][name] / first):.2f}x "
            f"({'linear' if seconds[last][name] / last <= 1.5 * seconds[first][name] / first else 'grows faster'})"
            for name in seconds[first]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="0.2,1,4")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--trees", type=Path, help="where the trees are written and kept (a tree already there is reused)")
    parser.add_argument("--write-only", action="store_true", help="write the trees (with --trees) and measure nothing")
    parser.add_argument("--measures", help="only these measurements (comma-separated), e.g. load_2,dask_2")
    parser.add_argument("--big-shard", type=int, metavar="MB", help="one shard of MB megabytes: load() on 1 worker vs 2")
    parser.add_argument("--s3", metavar="MB,MB", help="the tree in moto's S3 server at these sizes (bench_remote.py)")
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--measure", choices=SUMMARY_MEASURES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.tree)))
        return
    if args.s3:
        s3_tree([float(mb) for mb in args.s3.split(",")], args.repeat)
        return
    if args.write_only and not args.trees: parser.error("--write-only needs --trees")
    root = args.trees or Path(tempfile.mkdtemp(prefix="bench-scaling-", dir="/tmp"))
    if args.big_shard:
        try: big_shard(root, args.big_shard, args.repeat)
        finally:
            if not args.trees: shutil.rmtree(root, ignore_errors=True)
        return
    measures = args.measures.split(",") if args.measures else MEASURES
    rows, loads = {}, {}
    try:
        for size in map(float, args.sizes.split(",")):
            tree = root / f"{size}gb"
            if not (args.trees and tree.is_dir()): tree = write(size, root)
            if args.write_only: continue
            shards = list(tree.rglob("modeleval-*.jsonl"))
            gb = sum(p.stat().st_size for p in shards) / 1e9
            warm_page_cache(shards)  # a tree written ahead is read from memory, as one just written is
            before, runs = os.getloadavg()[0], {name: [] for name in measures}
            for round in range(args.repeat):  # rounds of every measurement, so that a slow spell of the machine hits them all
                for name in measures:
                    runs[name].append(run(name, tree))
                    print(f"{size} GB {name}, round {round + 1}: {runs[name][-1]['seconds']:.1f} s "
                          f"(load average {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
            for name in measures:
                best = min(runs[name], key=lambda r: r["seconds"])
                rows[(size, name)] = (gb, len(shards), best["seconds"], best["cpu"], max(best["peak_mb"], best["children_peak_mb"]))
            loads[size] = (before, os.getloadavg()[0])
            if not args.trees: shutil.rmtree(tree)
    finally:
        if not args.trees: shutil.rmtree(root, ignore_errors=True)
        if rows: report({k: v for k, v in rows.items() if k[0] in loads}, loads)


if __name__ == "__main__":
    main()
