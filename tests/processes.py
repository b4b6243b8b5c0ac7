"""What the tests need to know of processes (Linux /proc): a free port, a process's descendants,
whether one still runs, its process group and who else is in it, a machine kept busy, its command line, when they have gone quiet, how a forked child ended,
which descriptor is open on a file; and `modelrecord explore` run until its address is printed,
then stopped by PID with everything it started."""
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    "A TCP port on 127.0.0.1 that nothing listens on now."
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def descendants(pid: int) -> list:
    "The processes started by `pid`, and by them, from /proc (Linux)."
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try: children = [int(c) for c in (task / "children").read_text().split()]
            except OSError: continue
            found += children
            todo += children
    return found


def alive(pid: int) -> bool:
    "Whether `pid` runs (a zombie, dead but not yet reaped, does not)."
    try: return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError: return False


def group_of(pid: int):
    "The process group of `pid` (None once it is gone)."
    try: return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except OSError: return None


def in_groups(groups) -> list:
    "The running processes (not zombies) whose process group is one of `groups`, from /proc (Linux)."
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and group_of(int(entry.name)) in groups and alive(int(entry.name))]


@contextmanager
def busy_cores(per_core: int = 2):
    "The machine kept busy: `per_core` busy loops per processor, stopped by PID afterwards."
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(per_core * (os.cpu_count() or 1))]
    try: yield loops
    finally:
        for loop in loops: loop.kill(); loop.wait()


def cmdline(pid: int) -> str:
    "The command line of `pid`, as any local user can read it ('' once it is gone)."
    try: return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError: return ""


def cpu_ticks(pids) -> int:
    "The processor time (clock ticks, user and system) the processes `pids` have used so far (0 for one gone)."
    total = 0
    for pid in pids:
        try: fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError: continue
        total += int(fields[11]) + int(fields[12])
    return total


def settled(pid: int, still: float = 2.0, wait: float = 180) -> float:
    "Seconds until `pid`'s descendants (one at least) stayed the same processes, using no processor time, for `still` s."
    started, last = time.monotonic(), None
    while time.monotonic() - started < wait:
        pids = sorted(descendants(pid))
        now = (pids, cpu_ticks(pids)) if pids else None
        if now is not None and now == last: return time.monotonic() - started
        last = now
        time.sleep(still)
    raise TimeoutError(f"the processes of {pid} still worked after {wait:.0f} s")


def exit_code(pid: int, wait: float = 30):
    "The exit code of the forked child `pid`, or None when it had not ended within `wait` seconds (it is then killed)."
    deadline = time.monotonic() + wait
    while (waited := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    if waited != (0, 0): return os.waitstatus_to_exitcode(waited[1])
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def descriptor_of(path) -> int:
    "The file descriptor this process has open on `path`, found through /dev/fd (not through the opener's insides)."
    wanted = os.stat(path)
    for name in os.listdir("/dev/fd"):
        try: found = os.fstat(int(name))
        except OSError: continue
        if (found.st_dev, found.st_ino) == (wanted.st_dev, wanted.st_ino): return int(name)
    raise LookupError(f"{path} is not open in this process")


def stop_with_descendants(process: subprocess.Popen, started: set):
    "Stop `process` as Ctrl-C does (killed after 30 s), then kill what it started (`started` and its descendants now)."
    started.update(descendants(process.pid))
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try: process.wait(30)
        except subprocess.TimeoutExpired: process.kill(); process.wait()
    for pid in started:
        if alive(pid): os.kill(pid, signal.SIGKILL)


@contextmanager
def explore_server(log, *arguments: str, wait: float = 90):
    "`modelrecord explore *arguments`, stderr to the open file `log`: `(url, process, lines)` once it prints its address."
    command = [sys.executable, "-c", "import sys; from modelrecord.cli import main; sys.exit(main())",
               "explore", *arguments]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    started = set()
    try:
        deadline, url = time.monotonic() + wait, None
        while url is None and time.monotonic() < deadline and process.poll() is None:
            try: line = lines.get(timeout=0.5)
            except queue.Empty: continue
            if " at http://" in line: url = line.split(" at ", 1)[1].split()[0]
        assert url, f"no address printed within {wait:.0f} s (status {process.poll()}; see {log.name})"
        started.update(descendants(process.pid))
        yield url, process, lines
    finally:
        stop_with_descendants(process, started)
