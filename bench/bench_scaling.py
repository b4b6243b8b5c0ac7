"""How the cost of reading a tree grows with its size: trees of about 0.2, 1 and 4 GB, generated, measured, deleted.

    python bench/bench_scaling.py [--sizes 0.2,1,4] [--repeat 1]

Each tree is written with `modelrecord.sample.write_tree` under /tmp: 9 targets of shards of about
1.5 MB (as many processes as the size needs). Measured each in a fresh subprocess (see
bench_tables.py): `read_shards`, `load()` on 1 and 2 workers (no cache), a cached `load()` (the
cache filled first), and the Dask load on a LocalCluster of 2 worker processes (every table
persisted on the workers; their peak memory summed). For each measurement: seconds and peak MB
per size, seconds per GB, and whether it grows linearly (seconds per GB at the largest size within
1.5x of the smallest's, the same for memory). The machine is shared: compare within a run.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tables import SCALING_MEASURES, run  # noqa: E402

TARGETS = tuple(f"{e}-{i}" for i in range(5) for e in ("ce", "ee"))[:9]
SHARD_BYTES = 1_500_000


def write(size_gb: float, root: Path) -> Path:
    "A tree of about `size_gb` GB in shards of about 1.5 MB."
    from modelrecord.sample import write_tree
    total = int(size_gb * 1e9)
    per_target = max(1, round(total / SHARD_BYTES / len(TARGETS)))
    start = time.perf_counter()
    tree = write_tree(root / f"{size_gb}gb", seed=0, targets=TARGETS, shards_per_target=per_target, target_bytes=total)
    print(f"wrote {size_gb} GB ({per_target * len(TARGETS)} shards) in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return tree


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="0.2,1,4")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-scaling-", dir="/tmp"))
    rows = {}
    try:
        for size in map(float, args.sizes.split(",")):
            tree = write(size, root)
            gb = sum(p.stat().st_size for p in tree.rglob("modeleval-*.jsonl")) / 1e9
            shards = len(list(tree.rglob("modeleval-*.jsonl")))
            for name in SCALING_MEASURES:
                runs = [run(name, tree) for _ in range(args.repeat)]
                best = min(runs, key=lambda r: r["seconds"])
                rows[(size, name)] = (gb, shards, best["seconds"], best["cpu"], max(best["peak_mb"], best["children_peak_mb"]))
                print(f"{size} GB {name}: {best['seconds']:.1f} s", file=sys.stderr, flush=True)
            shutil.rmtree(tree)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    sizes = sorted({size for size, _ in rows})
    print(f"cores: {len(os.sched_getaffinity(0))}, shared with other work")
    print(f"{'measurement':<12}" + "".join(f"{f'{s} GB: s':>11}{'cpu s':>8}{'peak MB':>9}{'s/GB':>7}" for s in sizes) + "  linear?")
    for name in SCALING_MEASURES:
        line, per_gb, per_gb_mem = f"{name:<12}", [], []
        for size in sizes:
            gb, shards, seconds, cpu, peak = rows[(size, name)]
            per_gb.append(seconds / gb)
            per_gb_mem.append(peak / gb)
            line += f"{seconds:>11.1f}{cpu:>8.1f}{peak:>9.0f}{seconds / gb:>7.1f}"
        time_linear = per_gb[-1] <= 1.5 * per_gb[0]
        memory = "cached: mapped" if name == "cache_warm" else ("memory linear" if per_gb_mem[-1] <= 1.5 * per_gb_mem[0] else "memory grows faster")
        print(line + f"  time {'linear' if time_linear else 'grows faster'} ({per_gb[-1] / per_gb[0]:.2f}x s/GB), {memory}")
    print("trees: " + ", ".join(f"{size} GB = {rows[(size, 'read_shards')][0]:.2f} GB in {rows[(size, 'read_shards')][1]} shards" for size in sizes))


if __name__ == "__main__":
    main()
