"""One big shard in an S3 bucket against the same shard on disk: `tables.load` on 1 worker and on 2, and the Dask
tables persisted on a cluster of 1 worker process and of 2, as same-run ratios.

    python bench/bench_remote_shard.py [--size-mb 100] [--repeat 2] [--no-dask]

The shard is written with `modelrecord.sample.write_tree` under /tmp and uploaded to moto's S3 server on a free port
of 127.0.0.1 (`bench_remote.start_server`, stopped by PID after), read through s3fs, `cache=False`. Printed per load:
its time, this process's CPU seconds, and the server's (read from /proc): moto is a Python server on the same cores
as the reader, so what it serves competes with the workers, and its CPU seconds show how much more a load fetched.
Then, best of `--repeat`: 2 workers over 1 (on disk, from S3) and S3 over disk; the same for the Dask tables.
The machine is shared: compare within a run.
"""
import argparse
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from bench_remote import start_server


def server_cpu(pid: int) -> float:
    "CPU seconds of process `pid` so far (user and system, from /proc)."
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tables_loads(tree: Path, url: str, options: dict, server: int, repeat: int) -> dict:
    "(where, workers) -> the best time of `tables.load` of the shard on disk or in the bucket, printing each load."
    from modelrecord.tables import load
    times = {}
    for _ in range(repeat):
        for where, path in (("disk", tree), ("s3", url)):
            for workers in (1, 2):
                start, cpu, served = time.perf_counter(), time.process_time(), server_cpu(server)
                load(path, workers=workers, cache=False, progress=False, storage_options=options if where == "s3" else None)
                took = time.perf_counter() - start
                times[where, workers] = min(times.get((where, workers), took), took)
                print(f"  tables.load {where}, {workers} worker(s): {took:.2f} s; this process "
                      f"{time.process_time() - cpu:.2f} CPU s, the server {server_cpu(server) - served:.2f}", flush=True)
    return times


def dask_loads(tree: Path, url: str, options: dict, repeat: int) -> dict:
    "(where, workers) -> the best time of the Dask tables of the shard, every table persisted, on 1 and 2 worker processes."
    import distributed
    from modelrecord.dask import load as load_dask
    times = {}
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
            client.run(lambda: __import__("modelrecord.dask"))  # the workers' imports are the cluster's start
            for _ in range(repeat):
                for where, path in (("disk", tree), ("s3", url)):
                    start = time.perf_counter()
                    tables = load_dask(path, storage_options=options if where == "s3" else None)
                    distributed.wait(client.persist([frame for _, frame in tables.items()]))
                    took = time.perf_counter() - start
                    times[where, workers] = min(times.get((where, workers), took), took)
                    del tables
    return times


def report(what: str, times: dict):
    for where in ("disk", "s3"):
        print(f"{what} {where}: best 1 worker {times[where, 1]:.2f} s, 2 workers {times[where, 2]:.2f} s, "
              f"2 over 1 {times[where, 2] / times[where, 1]:.2f}")
    print(f"{what}: s3 over disk, 1 worker {times['s3', 1] / times['disk', 1]:.2f}, "
          f"2 workers {times['s3', 2] / times['disk', 2]:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    from modelrecord.sample import write_tree
    import s3fs
    scratch = Path(tempfile.mkdtemp(prefix="bench-remote-shard-"))
    tree = write_tree(scratch / "one", seed=0, targets=("ce",), shards_per_target=1, target_bytes=args.size_mb * 1_000_000)
    shard = next(tree.rglob("modeleval-*.jsonl"))
    print(f"one shard of {shard.stat().st_size / 1e6:.0f} MB; load average (1 min) {os.getloadavg()[0]:.1f}")
    child, endpoint = start_server()
    try:
        options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "anon": False}
        s3fs.S3FileSystem(**options).mkdir("bench")
        s3fs.S3FileSystem(**options).put(str(tree), "bench/one", recursive=True)
        report("tables.load", tables_loads(tree, "s3://bench/one", options, child.pid, args.repeat))
        if not args.no_dask: report("dask persisted", dask_loads(tree, "s3://bench/one", options, args.repeat))
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"load average (1 min) after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__": main()
