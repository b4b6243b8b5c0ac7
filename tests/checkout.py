"""Where the checkout's neighbours are, for the tests and the chapters alike: the read-only `shared/`
folder (with the reference runner's conformance shards) beside the checkout. A chapter imports it
from a hidden cell, `sys.path.insert(0, "../tests")`, as the tests do through pytest's rootdir."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    "The project's read-only `shared/` folder: in this checkout's folder or one above it."
    for parent in (ROOT, *ROOT.parents):
        if (parent / "shared" / "conformance-sample").is_dir(): return parent / "shared"
    raise RuntimeError(f"shared/ (with conformance-sample/) is expected beside the checkout, {ROOT}")
