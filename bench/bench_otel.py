"""How long OpenTelemetry GenAI export and import take on a large tree, against reading and rewriting its shards.

    python bench/bench_otel.py [--attempts 20000] [--dir /tmp]

A deterministic tree of `--attempts` attempts is generated (`modelrecord.sample.write_tree`, seed 0). Timed, in
one run:

- baseline: the tree read strictly (`read_shards`) and every line encoded again (`encode`) into one file: the
  least a pass that reads every line and writes it out costs;
- export: `export_otlp(tree, to=FILE)`: the spans built as opentelemetry-proto messages and written as OTLP/JSON
  by `json_format`;
- import: `import_otlp(FILE, to=TREE)`: that file read back into shards (and checked equal to the tree).

Each figure is printed in seconds and as a ratio to the baseline of the same run, so that a busy machine slows
them alike.
"""
import argparse
import shutil
import tempfile
import time
from pathlib import Path

from modelrecord.otel import export_otlp, import_otlp
from modelrecord.reader import read_shards
from modelrecord.record import encode
from modelrecord.sample import tree_bytes, write_tree


def baseline(tree: Path, out: Path) -> float:
    "Seconds to read the tree strictly and write every line encoded again."
    started = time.perf_counter()
    with out.open("wb") as file:
        for shard in read_shards(tree):
            file.write(b"".join(encode(record) + b"\n" for record in shard.records))
    return time.perf_counter() - started


def timed(function, *args, **kwargs) -> tuple:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20000)
    parser.add_argument("--dir", default=None, help="where the scratch tree and files go (default: a temporary one)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench-otel-"))
    try:
        tree = write_tree(scratch / "tree", attempts=args.attempts)
        size = sum(len(data) for data in tree_bytes(tree).values())
        base = baseline(tree, scratch / "lines.jsonl")
        export_s, exported = timed(export_otlp, tree, scratch / "traces.json")
        import_s, imported = timed(import_otlp, scratch / "traces.json", scratch / "back")
        same = tree_bytes(scratch / "back") == tree_bytes(tree)
        print(f"tree: {exported['attempts']:,} attempts, {exported['spans']:,} spans, {size / 1e6:.1f} MB of shards; "
              f"OTLP/JSON {exported['bytes'] / 1e6:.1f} MB")
        print(f"baseline (read + encode every line): {base:.1f} s")
        print(f"export_otlp: {export_s:.1f} s ({export_s / base:.1f}x baseline, "
              f"{exported['attempts'] / export_s:,.0f} attempts/s)")
        print(f"import_otlp: {import_s:.1f} s ({import_s / base:.1f}x baseline, "
              f"{imported['attempts'] / import_s:,.0f} attempts/s); the tree back byte for byte: {same}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
