"""How long OpenTelemetry GenAI export and import take on a large tree, against reading and rewriting its shards.

    python bench/bench_otel.py [--attempts 20000] [--dir /tmp]

A deterministic tree of `--attempts` attempts is generated (`modelrecord.sample.write_tree`, seed 0). Timed, in
one run:

- baseline: the tree read strictly (`read_shards`) and every line encoded again (`encode`) into one file: the
  least a pass that reads every line and writes it out costs;
- export: `export_otlp(tree, to=FILE)`: the spans built as plain dicts in the OTLP/JSON mapping and written by
  msgspec, a shard at a time;
- import: `import_otlp(FILE, to=TREE)`: that file read back into shards (and checked equal to the tree).

Each figure is printed in seconds of wall clock and of this process's CPU time, each as a ratio to the baseline's
of the same run, so that a busy machine slows them alike (on a shared machine the CPU ratio is the steadier one);
and the process's peak resident memory after each step (it only grows: a step's own peak is at most its figure).
"""
import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from modelrecord.otel import export_otlp, import_otlp
from modelrecord.reader import read_shards
from modelrecord.record import encode
from modelrecord.sample import tree_bytes, write_tree


def rewrite(tree: Path, out: Path) -> None:
    "Read the tree strictly and write every line encoded again (the baseline)."
    with out.open("wb") as file:
        for shard in read_shards(tree):
            file.write(b"".join(encode(record) + b"\n" for record in shard.records))


def timed(function, *args, **kwargs) -> tuple:
    "`((wall seconds, CPU seconds, peak MB so far), result)` of a call."
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (time.perf_counter() - wall, time.process_time() - cpu, peak), result


def figures(name: str, taken: tuple, base: tuple, attempts: int) -> str:
    "One step's line: wall and CPU seconds, each against the baseline's, attempts a second, peak memory."
    wall, cpu, peak = taken
    return (f"{name}: {wall:.2f} s wall ({wall / base[0]:.2f}x baseline), {cpu:.2f} s CPU ({cpu / base[1]:.2f}x), "
            f"{attempts / wall:,.0f} attempts/s; peak RSS so far {peak:,.0f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20000)
    parser.add_argument("--dir", default=None, help="where the scratch tree and files go (default: a temporary one)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench-otel-"))
    try:
        tree = write_tree(scratch / "tree", attempts=args.attempts)
        size = sum(len(data) for data in tree_bytes(tree).values())
        base, _ = timed(rewrite, tree, scratch / "lines.jsonl")
        export_t, exported = timed(export_otlp, tree, scratch / "traces.json")
        import_t, imported = timed(import_otlp, scratch / "traces.json", scratch / "back")
        same = tree_bytes(scratch / "back") == tree_bytes(tree)
        print(f"tree: {exported['attempts']:,} attempts, {exported['spans']:,} spans, {size / 1e6:.1f} MB of shards; "
              f"OTLP/JSON {exported['bytes'] / 1e6:.1f} MB")
        print(f"baseline (read + encode every line): {base[0]:.2f} s wall, {base[1]:.2f} s CPU; "
              f"peak RSS so far {base[2]:,.0f} MB")
        print(figures("export_otlp", export_t, base, exported["attempts"]))
        print(figures("import_otlp", import_t, base, imported["attempts"]) + f"; the tree back byte for byte: {same}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
