"""A tree in an S3 bucket against the same tree on disk: `load()` of the s3:// URL cold (every shard downloaded) and
cached (listed, nothing downloaded), as same-run ratios to `load()` of the local tree.

    python bench/bench_remote.py [--size-mb 200] [--repeat 3]

The tree is written with `modelrecord.sample.write_tree` under /tmp (shards of about 1.5 MB), uploaded to moto's S3
server started on a free port of 127.0.0.1 (`python -m moto.server`, stopped by PID after), and read through s3fs.
Measured in this process, best of `--repeat`, one worker (`workers=1`), so the ratios compare the transport, not
the pool:
- local: `load(tree, cache=False)`, the baseline;
- s3_cold: `load(url, cache=False)`: listed, every shard streamed from the server;
- s3_cached: `load(url)` with the cache filled by a first load: listed, no shard downloaded;
- local_cached: `load(tree)`, the cache filled: the same cache served from disk.
moto is a Python server on the same two cores as the reader, so s3_cold is an upper bound of the cost of the wire
on a real store (which serves from other machines); s3_cached is what a second load of a bucket costs: one listing.
Prints each figure and its ratio to `local`; the machine is shared: compare within a run.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SHARD_BYTES = 1_500_000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server() -> tuple:
    "`(child, endpoint)`: moto's S3 server on a free loopback port, answering."
    port = free_port()
    child = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    endpoint, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
            return child, endpoint
        except OSError:
            if child.poll() is not None or time.monotonic() > deadline: raise
            time.sleep(0.2)


def best(repeat: int, run) -> float:
    "The fastest of `repeat` runs of `run()`, in seconds."
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    os.environ["MODELRECORD_CACHE_DIR"] = str(scratch / "cache")
    from modelrecord.sample import write_tree
    from modelrecord.cache import clear_cache
    from modelrecord.tables import load
    import s3fs
    total = int(args.size_mb * 1e6)
    per_target = max(1, round(total / SHARD_BYTES / 2))
    tree = write_tree(scratch / "tree", seed=0, shards_per_target=per_target, target_bytes=total)
    size = sum(p.stat().st_size for p in tree.rglob("modeleval-*.jsonl"))
    child, endpoint = start_server()
    try:
        options = {"endpoint_url": endpoint, "key": "bench", "secret": "bench", "anon": False}
        fs = s3fs.S3FileSystem(**options)
        fs.mkdir("bench")
        fs.put(str(tree), "bench/tree", recursive=True)
        url = "s3://bench/tree"
        figures = {"local": best(args.repeat, lambda: load(tree, cache=False, workers=1, progress=False)),
                   "s3_cold": best(args.repeat, lambda: load(url, cache=False, workers=1, progress=False,
                                                              storage_options=options))}
        load(url, workers=1, progress=False, storage_options=options)  # the cache filled
        figures["s3_cached"] = best(args.repeat, lambda: load(url, progress=False, storage_options=options))
        load(tree, workers=1, progress=False)
        figures["local_cached"] = best(args.repeat, lambda: load(tree, progress=False))
        clear_cache()
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"tree: {size / 1e6:.0f} MB in {2 * per_target} shards; best of {args.repeat}; baseline: local")
    for name, seconds in figures.items():
        print(f"{name:13s} {seconds:7.2f} s  {figures[name] / figures['local']:5.2f}x local")


if __name__ == "__main__":
    main()
