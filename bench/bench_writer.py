"""How fast the shard writer appends a realistic tree, against a bare encode-and-os.write loop.

    python bench/bench_writer.py [--attempts 3000] [--rounds 3] [--dir /tmp]

The records are one realistic shard (`modelrecord.sample.generate`: a run line, sessions, attempts,
turns with text/thinking/tool-call blocks, calls with results from a few bytes to the 64 KiB cap,
verifies), built once in memory. Four ways of writing them are timed:

- baseline: `os.write(fd, encode(line) + b"\\n")` for each line, into one append-only file;
- writer: `Writer.write(line)` for each line, digests on (every line checked against the seen set);
- writer, one call per attempt: `Writer.write(*lines_of_the_attempt)`;
- writer, with repeats: each attempt's lines offered with its session line again, and every chunk
  of attempts offered a second time after it (a flush at the end of the run), as a harness may: the
  repeats are encoded and dropped, so this figure counts lines offered.

Every mode runs on each chunk of 100 attempts in turn, in a rotating order, so that a busy machine
slows them alike; the figures are totals over all rounds. The target is for the writer to reach at
least 0.75x the baseline's lines per second.
"""
import argparse
import os
import shutil
import tempfile
import time

from modelrecord.record import Attempt, Block, Call, Run, Session, Turn, Usage, Verify, cap_result, encode
from modelrecord.writer import open_dir, release


def realistic_lines(attempts: int) -> tuple[list, str]:
    "One realistic shard's lines, and where they come from."
    try:
        from modelrecord.sample import generate
        return generate(seed=0, attempts=attempts), "modelrecord.sample.generate(seed=0)"
    except ImportError:
        return _fallback_lines(attempts), "the fallback generator in this script"


def _fallback_lines(attempts: int) -> list:
    "A plain realistic shard, if modelrecord.sample is not there."
    import datetime as dt
    import json
    import random
    rng = random.Random(0)
    lines = [Run(run_id="bench", repeat=1, started_at=dt.datetime(2026, 9, 16, 9, tzinfo=dt.timezone.utc), edition="ee")]
    for session in range(4):
        lines.append(Session(label=f"s{session}", surface="dynamic", mode="default", capabilities="full", served_tools=40))
    for a in range(attempts):
        attempt = f"MT-{a:03d}/dynamic/1"
        lines.append(Attempt(id=attempt, case=f"MT-{a:03d}", model="anthropic:claude", session=f"s{a % 4}", repeat=1,
                             stimulus="Find the project and list its open merge requests. " * 3, ended_by="completed"))
        for index in range(1, rng.randint(2, 8)):
            arguments = json.dumps({"action": "merge_request.list", "params": {"project_id": 42, "state": "opened"}}).encode()
            lines.append(Turn(attempt=attempt, index=index, try_=1, status="ok", latency_ms=rng.uniform(300, 3000),
                              usage=Usage(input=rng.randint(1000, 30000), output=rng.randint(20, 800), cache_read=1000),
                              blocks=[Block(kind="thinking", text="I should list the merge requests. " * rng.randint(1, 20)),
                                      Block(kind="tool_call", tool="gitlab_execute_action", call_id=f"c{index}", arguments=arguments)]))
            size = int(rng.lognormvariate(7, 2))
            result, cut = cap_result(json.dumps({"items": ["x" * 40] * max(1, size // 44)}).encode())
            lines.append(Call(attempt=attempt, turn=index, index=index, tool="gitlab_execute_action", arguments=arguments,
                              outcome="ok", result=result, result_truncated=cut, text="## merge requests\n" * 10,
                              duration_ms=rng.uniform(10, 400), dispatch_observed=True))
        lines.append(Verify(attempt=attempt, name="merge requests listed", passed=True))
    return lines


def baseline(chunk: list, state: dict) -> int:
    "Encode every line and os.write it, with its newline, to one append-only file; the lines written."
    fd = state["fd"]
    for line in chunk:
        os.write(fd, encode(line) + b"\n")
    return len(chunk)


def per_line(chunk: list, state: dict) -> int:
    writer = state["writer"]
    for line in chunk:
        writer.write(line)
    return len(chunk)


def per_attempt(chunk: list, state: dict) -> int:
    writer = state["writer"]
    for head, attempt_lines in chunk:
        writer.write(*head, *attempt_lines)
    return sum(len(head) + len(lines) for head, lines in chunk)


def with_repeats(chunk: list, state: dict) -> int:
    "Each attempt re-offers its session line; the chunk is offered again at its end (a final flush). Lines offered."
    writer, offered = state["writer"], 0
    for head, attempt_lines in chunk:
        batch = [*state["sessions"].get(attempt_lines[0].session, ()), *head, *attempt_lines]
        writer.write(*batch)
        offered += len(batch)
    again = [line for head, attempt_lines in chunk for line in (*head, *attempt_lines)]
    writer.write(*again)
    return offered + len(again)


MODES = {"baseline": baseline, "writer, a call per line": per_line,
         "writer, a call per attempt": per_attempt, "writer, with repeats": with_repeats}


def chunks(lines: list, attempts_per_chunk: int) -> list:
    "The lines cut into chunks of whole attempts: (flat lines, [(lines before the attempt, attempt lines)])."
    groups, head, current = [], [], None
    for line in lines:
        if isinstance(line, Attempt):
            current = [line]
            groups.append((head, current))
            head = []
        elif current is None or isinstance(line, (Run, Session)):
            head.append(line)  # the run line and session lines go before the attempt that follows them
        else:
            current.append(line)
    cut = []
    for i in range(0, len(groups), attempts_per_chunk):
        part = groups[i:i + attempts_per_chunk]
        cut.append(([line for h, a in part for line in (*h, *a)], part))
    return cut


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write (default: the system temporary directory)")
    options = parser.parse_args()

    lines, source = realistic_lines(options.attempts)
    sessions = {line.label: (line,) for line in lines if isinstance(line, Session)}
    encoded = [encode(line) for line in lines]
    size = sum(len(e) + 1 for e in encoded)
    counts = {}
    for line in lines: counts[type(line).__name__] = counts.get(type(line).__name__, 0) + 1
    print(f"tree from {source}: {len(lines)} lines, {size / 1e6:.1f} MB "
          f"({', '.join(f'{n} {t.lower()}' for t, n in counts.items())}); "
          f"largest line {max(map(len, encoded)) / 1024:.0f} KiB, median {sorted(map(len, encoded))[len(encoded) // 2]} B")

    # Every mode runs on each chunk in turn (in a rotating order), so that a busy machine slows them alike.
    seconds, done = dict.fromkeys(MODES, 0.0), dict.fromkeys(MODES, 0)
    root = tempfile.mkdtemp(prefix="bench-writer-", dir=options.dir)
    try:
        for round in range(options.rounds):
            states = {}
            for name in MODES:
                directory = os.path.join(root, f"{round}-{list(MODES).index(name)}")
                os.mkdir(directory)
                states[name] = {"writer": open_dir(directory), "sessions": sessions,
                                "fd": os.open(os.path.join(directory, "baseline.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)}
            for k, (flat, groups) in enumerate(chunks(lines, 100)):
                names = list(MODES)[k % len(MODES):] + list(MODES)[:k % len(MODES)]
                for name in names:
                    chunk = flat if name in ("baseline", "writer, a call per line") else groups
                    start = time.perf_counter()
                    done[name] += MODES[name](chunk, states[name])
                    seconds[name] += time.perf_counter() - start
            for state in states.values(): os.close(state["fd"])
            release()
            for name in MODES: shutil.rmtree(os.path.join(root, f"{round}-{list(MODES).index(name)}"))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    base = done["baseline"] / seconds["baseline"]
    print(f"{'':28} {'lines/s':>10} {'MB/s':>7} {'x baseline':>11}")
    for name in MODES:
        rate = done[name] / seconds[name]
        note = " (lines offered, about half of them repeats, dropped)" if name == "writer, with repeats" else ""
        print(f"{name:28} {rate:10,.0f} {size * options.rounds / seconds[name] / 1e6:7.1f} {rate / base:10.2f}x{note}")
    ratio = done["writer, a call per line"] / seconds["writer, a call per line"] / base
    print(f"writer / baseline (a call per line): {ratio:.2f}x (target: at least 0.75x)")


if __name__ == "__main__":
    main()
