"""Benchmark drawing the pages of a results record: `pages.render_pages` on a record of 200 rows, each with 258 cases.

    python bench/bench_pages.py [--rows 200] [--cases 258] [--repeat 5]

The record's rows spread over three surfaces and two tiers, seven vendors; each row carries every case, so every
caption hashes 258 case ids (the coverage digest). Both plans are drawn: `gitlab-mcp-server` (nine blocks over two
pages, starting from the reference's pages as tests/data/publish holds them) and `default` (a legend and one block of
every row). The baseline, timed in the same process, is `json.loads` of the record's bytes: what any reader of the
record (`publish --check` first of all) pays before it draws anything. Each figure is the median of `--repeat` runs.
`publish --check` on 200 rows and two pages is to take under 1 s (issue 29); drawing is one part of it.
"""
import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from test_pages import DATA, RESULTS, README, two_models  # noqa: E402

from modelrecord.pages import load_plan, render_pages  # noqa: E402


def record_rows(count: int, cases: int) -> list:
    "`count` rows over three surfaces, two tiers and seven vendors, each covering `cases` cases."
    covered = {f"GL-{i:04}": {"run": "r-1", "date": "2026-09-16", "commit": "1" * 40} for i in range(cases)}
    rows = []
    for i in range(count):
        row = copy.deepcopy(two_models()[i % 2])
        row["key"].update(model=f"vendor{i % 7}:model-{i // 7}", surface=("dynamic", "meta", "individual")[i % 3],
                          tier=("free", "ultimate")[i // 3 % 2])
        row["cases"] = dict(covered)
        rows.append(row)
    return rows


def pages_root(root: Path, plan_name: str):
    "The pages a plan redraws, written under `root`."
    if plan_name == "default":
        (root / "docs").mkdir()
        (root / "docs/model-results.md").write_text("# Results\n\n<!-- START MODEL EVAL LEGEND -->\n<!-- END MODEL EVAL "
                                                    "LEGEND -->\n\n<!-- START MODEL EVAL RESULTS -->\n<!-- END MODEL EVAL "
                                                    "RESULTS -->\n")
        return
    (root / "docs/development/testing").mkdir(parents=True)
    (root / README).write_bytes((DATA / "README-summaries.md").read_bytes())
    (root / RESULTS).write_bytes((DATA / "model-results.md").read_bytes())


def median_seconds(work, repeat: int) -> float:
    "The median wall time of `repeat` calls of `work`."
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--cases", type=int, default=258)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = record_rows(args.rows, args.cases)
    data = json.dumps({"schema_version": 1, "note": "", "rows": rows}, indent=1).encode()
    baseline = median_seconds(lambda: json.loads(data), args.repeat)
    print(f"record: {args.rows} rows x {args.cases} cases, {len(data) / 2**20:.1f} MB; "
          f"json.loads of it (baseline): {baseline * 1000:.0f} ms")
    for plan_name in ("gitlab-mcp-server", "default"):
        plan = load_plan(plan_name)
        with tempfile.TemporaryDirectory() as tmp:
            pages_root(Path(tmp), plan_name)
            drawn = render_pages(rows, plan, tmp, args.cases)
            took = median_seconds(lambda: render_pages(rows, plan, tmp, args.cases), args.repeat)
        size = sum(len(text) for text in drawn.values())
        print(f"render_pages, plan {plan_name}: {took * 1000:.0f} ms ({took / baseline:.2f}x the baseline), "
              f"{len(drawn)} page(s), {size / 1024:.0f} KiB drawn")


if __name__ == "__main__":
    main()
