"""Data the tests and the chapters share, all of it inside the repository: a clone needs nothing
beside it. A chapter imports this from a hidden cell, `sys.path.insert(0, "../tests")`, as the
tests do through pytest's rootdir."""
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
CONFORMANCE = DATA / "conformance-sample"  # the reference runner's fixture shard (MIT; see its README.md)
