"""Reader benchmark: `read_shards` against a bare msgspec typed decode of the same tree.

    python bench/bench_reader.py [--mb 180] [--repeat 3]

Generates (once, under bench/out/) a realistic tree with `modelrecord.sample.write_tree`, then
measures in the same process, alternating to share the machine's noise:
- baseline: read each file whole, split it into lines, decode every line with one msgspec typed
  decoder and keep every record (GC paused, as the reader does), into two kinds of types:
  - bare: *mirror* structs with the same fields but none of the contract's constraints (the target);
  - typed: the package's own record types, whose field constraints msgspec checks while decoding
    (so the ratio against it is the reader's own overhead: blocks, line numbers, rules across fields);
- decode_lines: each file whole in one `Decoder.decode_lines` call into the record types, no line
  split at all: the floor of the reader's block path, which decodes a block of lines the same way;
- read_shards: the strict reader, every rule checked, line numbers tracked, bounded memory.
Peak memory of each is measured in a fresh subprocess (ru_maxrss above the interpreter's own).
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import time
import typing
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from modelrecord import record  # noqa: E402
from modelrecord.reader import read_shards, shard_paths  # noqa: E402


def bench_tree(mb: int) -> Path:
    "The benchmark tree of about `mb` MB, generated once under bench/out/."
    from modelrecord.sample import write_tree
    tree = HERE / "out" / f"tree-{mb}mb"
    if not (tree / ".complete").exists():
        started = time.perf_counter()
        write_tree(tree, seed=1, target_bytes=mb * 1_000_000)
        (tree / ".complete").write_text("")
        print(f"generated {tree} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return tree


def _bare(annotation, mirrors):
    "`annotation` without its constraints, structs replaced by their mirrors."
    if typing.get_origin(annotation) is typing.Annotated:
        return _bare(typing.get_args(annotation)[0], mirrors)
    if annotation in mirrors:
        return mirrors[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return type(args[0])
    if origin in (list, dict):
        return origin[tuple(_bare(a, mirrors) for a in args)]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return typing.Union[tuple(_bare(a, mirrors) for a in args)]
    return annotation


def mirror_types():
    "Struct types with the record types' fields and JSON names, but no constraints: the bare decode."
    mirrors = {}
    for struct in (record.Price, record.Provider, record.Run, record.Session, record.Attempt, record.Block,
                   record.Usage, record.Turn, record.Call, record.Verify):
        fields = [(f.name, _bare(f.type, mirrors),
                   msgspec.field(default=f.default, name=f.encode_name) if f.default is not msgspec.NODEFAULT
                   else msgspec.field(default_factory=f.default_factory, name=f.encode_name))
                  for f in msgspec.structs.fields(struct)]
        mirrors[struct] = msgspec.defstruct("Bare" + struct.__name__, fields, kw_only=True, gc=False)
    envelopes = []
    for payload, wrapped in record.RECORD_TYPES.items():
        tag = wrapped.__struct_config__.tag
        envelopes.append(msgspec.defstruct("Bare" + wrapped.__name__, [("schema", int), (tag, mirrors[payload])],
                                           tag_field="type", tag=tag, kw_only=True, gc=False))
    return typing.Union[tuple(envelopes)]


def baseline(paths, types=None, whole_files: bool = False) -> int:
    ("Typed decode of every line of every file (default: the bare mirror types), keeping every record; the record "
     "count. With `whole_files`, one `decode_lines` call per file instead of a split and a call per line.")
    decoder = msgspec.json.Decoder(types or mirror_types(), dec_hook=record.decode_hook)
    decode = decoder.decode_lines if whole_files else \
        lambda data: [decoder.decode(line) for line in data.split(b"\n") if line]
    kept = []
    gc.disable()
    try:
        for path in paths:
            with open(path, "rb") as file:
                kept.append(decode(file.read()))
    finally:
        gc.enable()
    return sum(map(len, kept))


def strict(tree) -> int:
    "The strict reader over the tree; returns the record count."
    return sum(len(s.records) for s in read_shards(tree))


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - started, result


def high_water_mb() -> float:
    "This process's peak resident memory so far, in MB (VmHWM: unlike ru_maxrss, not inherited across exec)."
    with open("/proc/self/status") as status:
        kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return kb / 1024


def peak_rss_mb(which: str, tree: Path) -> float:
    "Peak resident memory (MB) of one load in a fresh process, above the process's own after imports."
    code = f"""
import sys
sys.path.insert(0, {str(HERE)!r}); sys.path.insert(0, {str(HERE.parent)!r})
import bench_reader as b
from modelrecord.reader import shard_paths
before = b.high_water_mb()
paths = shard_paths({str(tree)!r})
n = b.baseline(paths) if {which!r} == "baseline" else b.strict({str(tree)!r})
print(b.high_water_mb() - before)
"""
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)


def main():
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--mb", type=int, default=180, help="size of the generated tree, in MB")
    options.add_argument("--repeat", type=int, default=3, help="alternating rounds; the best of each is kept")
    args = options.parse_args()

    tree = bench_tree(args.mb)
    paths = shard_paths(tree)
    size = sum(os.path.getsize(p) for p in paths)
    base_times, typed_times, lines_times, strict_times = [], [], [], []
    for _ in range(args.repeat):
        seconds, base_count = timed(baseline, paths)
        base_times.append(seconds)
        seconds, _ = timed(baseline, paths, record.AnyRecord)
        typed_times.append(seconds)
        seconds, lines_count = timed(baseline, paths, record.AnyRecord, True)
        lines_times.append(seconds)
        seconds, strict_count = timed(strict, tree)
        strict_times.append(seconds)
    assert base_count == strict_count == lines_count, (base_count, strict_count, lines_count)
    base, typed, lines, best = min(base_times), min(typed_times), min(lines_times), min(strict_times)
    mb = size / 1e6
    rss_strict, rss_base = peak_rss_mb("strict", tree), peak_rss_mb("baseline", tree)
    figures = {
        "tree_mb": round(mb, 1), "shards": len(paths), "records": strict_count,
        "baseline_mb_s": round(mb / base, 1), "read_shards_mb_s": round(mb / best, 1),
        "throughput_ratio": round(base / best, 3), "typed_decode_mb_s": round(mb / typed, 1),
        "ratio_to_typed_decode": round(typed / best, 3),
        "decode_lines_mb_s": round(mb / lines, 1), "ratio_to_decode_lines": round(lines / best, 3),
        "read_shards_peak_mb": round(rss_strict, 1), "baseline_peak_mb": round(rss_base, 1),
        "peak_over_tree_size": round(rss_strict / mb, 2),
    }
    print(f"tree: {mb:.1f} MB in {len(paths)} shards, {strict_count} records")
    print(f"bare msgspec typed decode : {mb / base:7.1f} MB/s  (best of {args.repeat}: {base:.2f} s)")
    print(f"decode into record types  : {mb / typed:7.1f} MB/s  (best of {args.repeat}: {typed:.2f} s; constraints checked)")
    print(f"decode_lines, whole files : {mb / lines:7.1f} MB/s  (best of {args.repeat}: {lines:.2f} s; record types)")
    print(f"read_shards (strict)      : {mb / best:7.1f} MB/s  (best of {args.repeat}: {best:.2f} s)")
    print(f"throughput ratio          : {base / best:.3f}x the bare decode (target >= 0.9)")
    print(f"                            {typed / best:.3f}x the decode into the record types")
    print(f"                            {lines / best:.3f}x one decode_lines per file into the record types")
    print(f"peak memory read_shards   : {rss_strict:.0f} MB = {rss_strict / mb:.2f}x the tree (target <= 3)")
    print(f"peak memory bare decode   : {rss_base:.0f} MB")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
