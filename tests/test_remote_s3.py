"""A tree in an S3 bucket, on a real S3-compatible server on loopback (moto's, started by the test on a free port
and stopped by PID), read with s3fs: the same tables as from disk, the commands on the s3:// URL, the load cache
downloading nothing the second time (counted in the server's own request log), refusals naming the URL."""
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pandas as pd
import pytest

from processes import free_port

from modelrecord.cli import main
from modelrecord.reader import ShardError
from modelrecord.sample import example_key, example_tree
from modelrecord.tables import TABLES, load

pytestmark = pytest.mark.slow  # starts a server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    "`(endpoint, log)`: moto's S3 server on 127.0.0.1, its request log a file; stopped by PID after the module."
    port, log = free_port(), tmp_path_factory.mktemp("moto") / "requests.log"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    with open(log, "w") as sink:
        child = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                 stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
                break
            except OSError:
                if child.poll() is not None or time.monotonic() > deadline: raise
                time.sleep(0.2)
        yield endpoint, log
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(10)


@pytest.fixture(scope="module")
def bucket(server):
    "`(url, options)`: the example tree uploaded to s3://examples/tree, and the storage options that reach it."
    import s3fs
    endpoint, _ = server
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "anon": False}
    fs = s3fs.S3FileSystem(**options)
    fs.mkdir("examples")
    fs.put(str(example_tree()), "examples/tree", recursive=True)
    return "s3://examples/tree", options


def gets(log, part: str) -> int:
    "How many GET requests for an object whose key holds `part` the server has logged so far."
    return sum(1 for line in open(log) if '"GET ' in line and part in line and "list-type" not in line)


def run(*argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err): status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_the_tree_in_the_bucket_loads_as_the_tree_on_disk(bucket):
    url, options = bucket
    for content in (False, True):
        remote = load(url, content=content, cache=False, storage_options=options)
        local = load(example_tree(), content=content, cache=False)
        for name in TABLES: pd.testing.assert_frame_equal(remote[name], local[name])
    assert remote.root == url


def test_the_second_load_downloads_nothing(bucket, server, cache):
    url, options = bucket
    _, log = server
    before = gets(log, "modeleval-")
    first = load(url, storage_options=options)
    assert gets(log, "modeleval-") - before >= 4  # every shard downloaded
    before = gets(log, "modeleval-")
    again = load(url, storage_options=options)
    assert gets(log, "modeleval-") == before  # listed again, downloaded never
    for name in TABLES: pd.testing.assert_frame_equal(first[name], again[name])


def test_the_commands_read_the_bucket(bucket, tmp_path):
    url, options = bucket
    given = ["--storage-option", f"endpoint_url={options['endpoint_url']}", "--storage-option", "key=testing",
             "--storage-option", "secret=testing", "--storage-option", "anon=false"]
    status, out, err = run("validate", url, *given)
    assert (status, err) == (0, "") and out.endswith(f"{url}: 4 shards, 2142 lines, all valid\n")
    remote, local = run("summary", url, "--json", *given), run("summary", str(example_tree()), "--json")
    assert remote[0] == 0 and json.loads(remote[1]) == json.loads(local[1]), remote[2]
    status, out, err = run("score", url, "--key", str(example_key()), "--json", *given)
    assert status == 0 and json.loads(out)["rows"], err
    status, out, err = run("export", url, "--to", str(tmp_path / "out"), *given)
    assert status == 0 and (tmp_path / "out" / "attempts").is_dir(), err


@pytest.mark.parametrize("where", ["s3://no-such-bucket/tree", "s3://examples/no-such-prefix"])
def test_a_missing_bucket_or_prefix_is_refused_naming_the_url(bucket, where):
    _, options = bucket
    with pytest.raises(ShardError) as refused: load(where, storage_options=options)
    assert str(refused.value).startswith(f"{where}: ")
    status, out, err = run("summary", where, "--storage-option", f"endpoint_url={options['endpoint_url']}",
                           "--storage-option", "key=testing", "--storage-option", "secret=testing")
    assert (status, out) == (1, "") and err.startswith(f"modelrecord: {where}: "), err
