"""What the browser tests need to know of the processes a server starts (Linux /proc): a free port,
a process's descendants, whether one still runs, its command line."""
import socket
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


def cmdline(pid: int) -> str:
    "The command line of `pid`, as any local user can read it ('' once it is gone)."
    try: return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError: return ""
