"""`serve` refuses what it cannot serve before anything starts, and the served page's explorer opens
only the tree it was started on (the server itself, in a browser: tests/test_serve_browser.py)."""
import os
import re
import shutil
import socket
import time

import pytest

from modelrecord.sample import example_tree
from modelrecord.serve import ANY_PATH_ENV, PATH_ENV, page_explorer, serve

SECRET = "SECRET-VALUE-4711"


def test_a_busy_port_is_refused_before_anything_starts(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert serve(example_tree(), port=taken.getsockname()[1]) == 1
    assert "is in use" in capsys.readouterr().err


@pytest.fixture
def trees(tmp_path):
    "`(tree, outside)`: a copy of the example tree, and beside it a shard outside it whose only line quotes a secret."
    tree = tmp_path / "tree"
    shutil.copytree(example_tree(), tree)
    outside = tmp_path / "elsewhere" / "modeleval-secret.jsonl"
    outside.parent.mkdir()
    outside.write_text('{"type": "%s"}\n' % SECRET)  # the reader's refusal of this line would quote the value
    return tree, outside


def page(tree, **environ):
    "The explorer the served page shows for `tree`, as the page's kernel makes it."
    explorer = page_explorer({PATH_ENV: str(tree), **environ})
    assert explorer.error is None and explorer.tree is not None
    return explorer


def test_the_path_box_does_not_open_etc(trees):
    tree, _ = trees
    explorer = page(tree)
    for elsewhere in ("/etc", "/etc/passwd", "..", "/", "ce/../../.."):
        explorer.path.value = elsewhere
        explorer.load()
        assert "is outside the tree this page serves" in explorer.status.value, elsewhere
        assert explorer.tree.path.resolve() == tree.resolve()  # still showing the tree, nothing else was read
    explorer.path.value = "/etc"
    explorer.refresh()
    assert "is outside the tree" in explorer.status.value and "root:" not in explorer.status.value
    explorer.close()


def test_a_file_outside_the_tree_is_refused_without_echoing_its_values(trees):
    tree, outside = trees
    explorer = page(tree)
    (tree / "ce" / "modeleval-link.jsonl").symlink_to(outside)  # inside by name, outside once resolved
    for name in (str(outside), str(outside.parent), "../elsewhere/modeleval-secret.jsonl", "ce/modeleval-link.jsonl", "ce"):
        explorer.load(name)
        assert "is outside the tree" in explorer.status.value, name
        assert SECRET not in explorer.status.value, name
    explorer.close()


def test_a_subdirectory_of_the_tree_opens(trees):
    tree, _ = trees
    explorer = page(tree)
    explorer.load("ce")
    assert explorer.error is None and explorer.tree.path.resolve() == (tree / "ce").resolve()
    explorer.close()


def test_allow_any_path_opens_the_page_up(trees):
    tree, outside = trees
    explorer = page(tree, **{ANY_PATH_ENV: "1"})
    explorer.load(str(outside))  # read, and its bad line listed (the page salvages), as any tree the page may open
    assert "is outside" not in explorer.status.value and "is not a line type" in explorer.banner.value
    explorer.close()


def test_the_served_example_is_scored_against_its_bundled_key(monkeypatch):
    "`modelrecord explore` with no path and no --key serves the example scored by its key, as `score` uses it."
    import modelrecord.serve
    from modelrecord.cli import main
    from modelrecord.sample import example_key
    from modelrecord.serve import KEY_ENV, _voila_env
    served = {}
    monkeypatch.setattr(modelrecord.serve, "serve", lambda tree, **options: served.update(tree=tree, **options) or 0)
    assert main(["explore"]) == 0
    assert served["key"] == example_key()
    environ = _voila_env(served["tree"], "token", False, served["key"])
    explorer = page_explorer({PATH_ENV: environ[PATH_ENV], KEY_ENV: environ[KEY_ENV]})
    explorer.show_tab("Score")
    assert explorer.scores is not None and "No answer key" not in explorer.score_view.value
    assert "Accepted first time" in explorer.score_view.value  # a score table, not the note
    explorer.close()
    assert main(["explore", str(example_tree())]) == 0 and served["key"] is None  # a tree named: no key guessed


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_stopping_the_command_prints_no_traceback(tmp_path, stop):
    "Ctrl-C or SIGTERM, once a page was viewed (its kernel busy), prints 'stopped' and no kernel's traceback."
    import signal
    import urllib.request
    from processes import explore_server
    with open(tmp_path / "stderr.log", "w") as log, explore_server(log, wait=300) as (url, process, lines):
        urllib.request.urlopen(url, timeout=180).read()  # a view: the warm kernel is handed out, another one starts
        time.sleep(5)  # the pool's next kernel is starting or running the page when the stop comes
        process.send_signal(getattr(signal, stop))
        assert process.wait(60) == 0
        time.sleep(0.5)  # the reader thread takes in the last lines
        said = "".join(lines.queue)
    err = (tmp_path / "stderr.log").read_text()
    assert "Traceback" not in err and "ZMQError" not in err, err
    assert "modelrecord explore: stopped" in said


def test_the_address_is_printed_once_the_page_is_drawn(tmp_path):
    "Opened as soon as its address is printed, the page comes at once: the pre-warmed kernel has already drawn it."
    import urllib.request
    from processes import explore_server
    with open(tmp_path / "stderr.log", "w") as log, explore_server(log, wait=300) as (url, _, _):
        started = time.monotonic()
        page = urllib.request.urlopen(url, timeout=180).read().decode()
        waited = time.monotonic() - started
    assert "modelrecord" in page
    assert waited <= 5, f"the page took {waited:.1f} s after its address was printed"
    # until the summary shows, a bar with counts says what the page waits for (not Voila's bare "Running ...")
    assert 'id="mr-loading-bar"' in page and "#loading { display: none !important; }" in page
    assert re.search(r"mr-expect[^>]{0,20}data-widgets=[^0-9]{0,4}[1-9][0-9]*", page), "the page gives its bar no count"


def stopped_by_ctrl_c(process, hang_server: bool = False) -> tuple:
    """SIGINT to `modelrecord explore` (after freezing its Voila, and again a second later, if `hang_server`): `(seconds it ran on, pids it had
    started, pids of those or of their process groups still running half a second after it ended)`."""
    import signal
    from processes import alive, cmdline, descendants, group_of, in_groups
    started = set(descendants(process.pid))
    groups = {group_of(pid) for pid in started}
    if hang_server:  # Voila hangs on the way out
        os.kill(next(pid for pid in started if " -m voila " in cmdline(pid)), signal.SIGSTOP)
    process.send_signal(signal.SIGINT)
    signalled = time.monotonic()
    if hang_server:
        time.sleep(1)
        process.send_signal(signal.SIGINT)  # and, as it hangs, the person presses Ctrl-C again
    while process.poll() is None and time.monotonic() - signalled < 60:
        for pid in descendants(process.pid):  # a kernel the stop itself starts counts too
            started.add(pid)
            groups.add(group_of(pid))
        time.sleep(0.05)
    took = time.monotonic() - signalled
    time.sleep(0.5)  # what was killed has been reaped
    return took, started, sorted({pid for pid in started if alive(pid)} | set(in_groups(groups - {None})))


def test_ctrl_c_on_a_busy_machine_ends_within_seconds_and_leaves_nothing_running(tmp_path):
    """Ctrl-C while the pool's next kernel is still starting, on a machine busy with other work: the command
    ends within seconds (a person waits no longer), with status 0, and no process it started, nor any other
    process in their groups, runs on."""
    import urllib.request
    from processes import busy_cores, explore_server
    with open(tmp_path / "stderr.log", "w") as log, explore_server(log, wait=300) as (url, process, lines):
        urllib.request.urlopen(url, timeout=180).read()  # the warm kernel is handed out; the pool starts the next 1 s later
        with busy_cores(2):
            time.sleep(2)  # the next kernel is importing, far from answering a request to stop
            took, started, left = stopped_by_ctrl_c(process)
    assert len(started) >= 2, "the server and a kernel at least were running when the stop came"
    assert process.returncode == 0, process.returncode
    assert took <= 10, f"the command ran {took:.1f} s after Ctrl-C"
    assert not left, f"still running after the stop: {left}"


def test_a_server_that_hangs_on_ctrl_c_is_killed_with_its_kernels_within_seconds(tmp_path):
    """Ctrl-C when Voila does not stop (frozen here), pressed twice: the command still ends within seconds, without a
    traceback, and kills Voila and its kernels."""
    import urllib.request
    from processes import explore_server
    with open(tmp_path / "stderr.log", "w") as log, explore_server(log, wait=300) as (url, process, lines):
        urllib.request.urlopen(url, timeout=180).read()  # a page's kernel, and the pool's next one
        time.sleep(2)
        took, started, left = stopped_by_ctrl_c(process, hang_server=True)
        said = "".join(lines.queue)
    assert len(started) >= 2, "the server and a kernel at least were running when the stop came"
    assert process.returncode == 0 and "modelrecord explore: stopped" in said, (process.returncode, said)
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()  # the second Ctrl-C too
    assert took <= 10, f"the command ran {took:.1f} s after Ctrl-C"
    assert not left, f"still running after the stop: {left}"
