"""How long the interchange formats take on a large tree, against reading the same tree with the core reader.

    python bench/bench_interchange.py [--attempts 20000] [--formats inspect] [--dir /tmp]

A deterministic tree (`modelrecord.sample.write_tree`, seed 0) of `--attempts` attempts is written once into a
scratch directory. The baseline is `read_shards` of that tree (the strict core reader, which every export starts
with). Then, for each format, its own function times an export of the tree, a read of what was exported with the
format's own reader, and an import of it into a new tree, and prints each as seconds and as a ratio to the
baseline measured in the same run, so that a busy machine slows them alike.

Each format is one function `bench_<format>(tree, scratch) -> list of (what, seconds, note)`, listed in `FORMATS`:
a format's helper adds its own.
"""
import argparse
import shutil
import tempfile
import time
from pathlib import Path

from modelrecord.reader import read_shards
from modelrecord.sample import write_tree


def timed(run) -> tuple:
    "What `run()` returns, and the seconds it took."
    started = time.perf_counter()
    value = run()
    return value, time.perf_counter() - started


def bench_inspect(tree: Path, scratch: Path) -> list:
    "Export the tree as Inspect logs, read every log with Inspect's reader, import the logs into a new tree."
    from inspect_ai.log import read_eval_log
    from modelrecord.inspect_logs import export_inspect, import_inspect
    written, export_s = timed(lambda: export_inspect(tree, scratch / "inspect-logs"))
    samples, read_s = timed(lambda: sum(len(read_eval_log(str(p)).samples) for p in written))
    summary, import_s = timed(lambda: import_inspect(scratch / "inspect-logs", scratch / "inspect-tree"))
    size = sum(p.stat().st_size for p in written) / 1e6
    return [("inspect export", export_s, f"{len(written)} .eval logs, {size:,.1f} MB"),
            ("inspect read (read_eval_log)", read_s, f"{samples} samples"),
            ("inspect import", import_s, f"{summary.attempts} attempts, {summary.turns} turns, {summary.calls} calls")]


FORMATS = {"inspect": bench_inspect}  # format -> its bench function


def main(argv=None):
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--attempts", type=int, default=20_000)
    options.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of: " + ", ".join(FORMATS))
    options.add_argument("--dir", default=None, help="where the scratch directory goes (default: the system's)")
    args = options.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="bench-interchange-", dir=args.dir))
    try:
        _, write_s = timed(lambda: write_tree(scratch / "tree", seed=0, attempts=args.attempts))
        shards, base_s = timed(lambda: read_shards(scratch / "tree"))
        lines = sum(len(s.records) for s in shards)
        size = sum(p.stat().st_size for p in (scratch / "tree").rglob("modeleval-*.jsonl")) / 1e6
        print(f"tree: {args.attempts} attempts, {lines} lines, {size:,.1f} MB in {len(shards)} shards (written in {write_s:.1f} s)")
        print(f"{'baseline: read_shards':32} {base_s:8.2f} s   1.0x")
        for name in args.formats.split(","):
            for what, seconds, note in FORMATS[name](scratch / "tree", scratch):
                print(f"{what:32} {seconds:8.2f} s {seconds / base_s:6.1f}x   {note}")
    finally: shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
