"""How big the chapters' export cells are: per chapter, the lines per `#| export` cell (median, p90,
max) and the share of export cells that define more than one thing (a def or class, or a top-level
assignment to a public name). Issue 26 asks for a median <= 10 and a p90 <= 25 in every chapter.

    python tools/cell_figures.py [--check] [NOTEBOOK ...]

`--check` exits 1 when a chapter misses either figure.
"""
import argparse
import ast
import json
import statistics
import sys
from pathlib import Path

NBS = Path(__file__).resolve().parents[1] / "nbs"
MEDIAN, P90 = 10, 25


def export_cells(path: Path) -> list[str]:
    "The code of each `#| export` cell of a notebook, directive lines left out."
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    out = []
    for cell in cells:
        if cell["cell_type"] != "code": continue
        lines = "".join(cell["source"]).splitlines()
        if not any(l.strip().replace(" ", "") in ("#|export", "#|exporti") for l in lines): continue
        out.append("\n".join(l for l in lines if not l.lstrip().startswith("#|")))
    return out


def definitions(code: str) -> int:
    "How many things a cell defines: functions, classes and assignments at its top level (imports are not counted)."
    count = 0
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): count += 1
        elif isinstance(node, (ast.Assign, ast.AnnAssign)): count += 1
    return count


def percentile(values: list[int], share: float) -> float:
    "The nearest-rank percentile of `values`."
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered) + 0.5) - 1))]


def figures(path: Path) -> dict | None:
    "One chapter's figures, or None when it exports nothing."
    cells = export_cells(path)
    if not cells: return None
    sizes = [len([l for l in c.splitlines() if l.strip()]) for c in cells]
    return dict(chapter=path.stem, cells=len(cells), median=statistics.median(sizes), p90=percentile(sizes, 0.9),
                max=max(sizes), multi=sum(definitions(c) > 1 for c in cells) / len(cells))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when a chapter's median passes {MEDIAN} or its p90 {P90}")
    args = parser.parse_args(argv)
    rows = [f for p in (args.notebooks or sorted(NBS.glob("*.ipynb"))) if (f := figures(p))]
    print(f"{'chapter':<16} {'cells':>5} {'median':>6} {'p90':>4} {'max':>4} {'multi':>6}")
    short = []
    for r in rows:
        flag = r["median"] > MEDIAN or r["p90"] > P90
        if flag: short.append(r["chapter"])
        print(f"{r['chapter']:<16} {r['cells']:>5} {r['median']:>6g} {r['p90']:>4g} {r['max']:>4} {r['multi']:>6.0%}{'  short' if flag else ''}")
    every = [len([l for l in c.splitlines() if l.strip()]) for p in (args.notebooks or sorted(NBS.glob("*.ipynb"))) for c in export_cells(p)]
    print(f"{'all':<16} {len(every):>5} {statistics.median(every):>6g} {percentile(every, 0.9):>4g} {max(every):>4}")
    return 1 if args.check and short else 0


if __name__ == "__main__":
    sys.exit(main())
