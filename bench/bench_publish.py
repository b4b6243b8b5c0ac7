"""Benchmark `modelrecord publish`: folding a generated run against scoring it, and `--check` on a large record.

    python bench/bench_publish.py [--bytes 100000000] [--repeat 2] [--rows 200]

1. fold / score: a tree written by `modelrecord.sample.write_tree` (about `--bytes`, under bench/out/, git-ignored)
   is loaded once to fill the load cache, then timed `--repeat` times each, alternating, best time kept:
   - score: `score(load(tree, content=True), key).table()`, what `modelrecord score` does;
   - fold: `publish.fold(tree, key, {})` and the record's bytes, what `modelrecord publish --shards` does.
   Target: fold <= 1.2 x score (the fold scores once, through the scorer, and adds the run and session lines).
2. check: a record of `--rows` rows (the fold's rows, their models renamed so that each is a row of its own),
   drawn into two pages by a two-page plan, then `publish(Options(check=True))` timed, wall and processor time
   (the machine may be shared: the processor time is what the check itself costs). Target: under 1 s.
"""
import argparse
import json
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from modelrecord.publish import Options, fold, publish, record_bytes  # noqa: E402
from modelrecord.sample import write_tree  # noqa: E402


def tree(size: int) -> Path:
    "The benchmark tree of about `size` bytes, written once."
    path = HERE / "out" / f"publish-{size}"
    if not (path / "key.json").exists():
        shutil.rmtree(path, ignore_errors=True)
        write_tree(path, seed=11, attempts=1000, target_bytes=size, huge=0.0)
    return path


def best(function, repeat: int, cpu: bool = False):
    "The best wall time of `repeat` calls of `function` (with `cpu`: `(wall, processor time)`, each its best)."
    times, cpus = [], []
    for _ in range(repeat):
        start, clock = time.perf_counter(), time.process_time()
        function()
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - clock)
    return (min(times), min(cpus)) if cpu else min(times)


def fold_against_score(path: Path, repeat: int):
    from modelrecord.key import load_key
    from modelrecord.score import score
    from modelrecord.tables import load
    key = load_key(path / "key.json")
    def scoring(): score(load(path, content=True, progress=False), key).table()
    def folding():
        found = fold(str(path), key, {})
        record_bytes(found.rows, "note")
        return found
    scoring()  # fills the load cache, so both read the same way
    times = {"score": [], "fold": []}
    for _ in range(repeat):  # alternated, so that a busy moment of the machine is shared
        times["score"].append(best(scoring, 1))
        times["fold"].append(best(folding, 1))
    return min(times["score"]), min(times["fold"]), folding()


PAGE = "# {name}\n\n<!-- START MODEL EVAL {block} -->\n<!-- END MODEL EVAL {block} -->\n"


def check_time(rows: list, count: int, repeat: int) -> tuple:
    "Seconds `--check` takes on a record of `count` rows drawn into two pages."
    from modelrecord.pages import _fnv1a, key_string
    root = Path(tempfile.mkdtemp())
    made = []
    for n in range(count):
        row = json.loads(json.dumps(rows[n % len(rows)]))
        row["key"]["model"] = f"{row['key']['model']}#{n}"
        made.append(row)
    assert len({key_string(r["key"]) for r in made}) == count
    (root / "docs").mkdir()
    (root / "docs/model-results.json").write_bytes(record_bytes(made, "note"))
    (root / "docs/a.md").write_text(PAGE.format(name="A", block="DYNAMIC"))
    (root / "docs/b.md").write_text(PAGE.format(name="B", block="OTHERS"))
    plan = {"record": "docs/model-results.json", "pages": ["docs/a.md", "docs/b.md"],
            "blocks": [{"name": "DYNAMIC", "page": "docs/a.md", "kind": "detailed", "surface": "dynamic"},
                       {"name": "OTHERS", "page": "docs/b.md", "kind": "detailed", "surface": "meta"}]}
    (root / "plan.json").write_text(json.dumps(plan))
    publish(Options(render=True, root=str(root), plan=str(root / "plan.json")))
    outcome = None
    def checking():
        nonlocal outcome
        _fnv1a.cache_clear()  # each repetition as a fresh process would run it: no coverage digest known
        outcome = publish(Options(check=True, root=str(root), plan=str(root / "plan.json")))
    seconds = best(checking, repeat, cpu=True)
    return seconds, outcome


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=100_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--rows", type=int, default=200)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    path = tree(args.bytes)
    size = sum(p.stat().st_size for p in path.rglob("modeleval-*.jsonl"))
    scored, folded, found = fold_against_score(path, args.repeat)
    print(f"tree: {size / 1e6:.0f} MB; {len(found.candidates)} candidate rows, {len(found.rows)} published")
    print(f"score: {scored:.2f} s   fold: {folded:.2f} s   fold / score: {folded / scored:.2f}x (target <= 1.2x)")
    (seconds, cpu), outcome = check_time(found.rows or [], args.rows, max(args.repeat, 3))
    print(f"--check on {args.rows} rows and two pages: {seconds:.3f} s, processor time {cpu:.3f} s (target < 1 s); "
          f"exit {outcome.status}, {len(outcome.facts['findings'])} finding(s)")


if __name__ == "__main__":
    main()
