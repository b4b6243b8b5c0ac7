"""Shared fixtures: where the read-only `shared/` folder is, and small trees to read."""
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _shared() -> Path:
    for parent in (ROOT, *ROOT.parents):
        if (parent / "shared" / "conformance-sample").is_dir():
            return parent / "shared"
    raise RuntimeError("shared/ (with conformance-sample/) is expected beside the checkout")


@pytest.fixture(scope="session")
def shared() -> Path:
    "The read-only shared/ folder beside the checkout."
    return _shared()


@pytest.fixture(scope="session")
def conformance(shared) -> Path:
    "The reference runner's conformance shards."
    return shared / "conformance-sample"
