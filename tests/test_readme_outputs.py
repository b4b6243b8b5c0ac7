"""The README shows what commands print: every fenced output block that follows a `modelrecord ...`
command block is compared with what that command prints now (the block may show the first lines
only), so that the README's description of the score table or of `compare` cannot drift from the
program."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)


def shown_outputs(text: str) -> list:
    "Each (command, its shown output lines) of the README: a `sh` block of one modelrecord command, then a bare block."
    blocks = [(m.group(1), m.group(2)) for m in BLOCK.finditer(text)]
    pairs = []
    for (kind, command), (next_kind, output) in zip(blocks, blocks[1:]):
        lines = command.strip().splitlines()
        if kind == "sh" and next_kind == "" and len(lines) == 1 and "modelrecord " in lines[0]:
            pairs.append((lines[0], output.rstrip("\n").splitlines()))
    return pairs


def printed(command: str) -> list:
    "The lines `command` (with its leading VAR=value settings) prints, run from the checkout."
    words = shlex.split(command)
    settings = dict(w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=.*", w))
    argv = [w for w in words if not re.fullmatch(r"[A-Z_]+=.*", w)]
    assert argv[0] == "modelrecord"
    env = {**os.environ, **settings}
    if "COLUMNS" not in settings: env.pop("COLUMNS", None)
    done = subprocess.run([sys.executable, "-c", "import sys; from modelrecord.cli import main; sys.exit(main())", *argv[1:]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_readme_shows_outputs_of_score_and_compare():
    commands = [command for command, _ in shown_outputs((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert any(" score" in c for c in commands) and any(" compare" in c for c in commands), commands


@pytest.mark.parametrize("command, shown", shown_outputs((ROOT / "README.md").read_text(encoding="utf-8")))
def test_a_shown_output_is_what_the_command_prints(command, shown):
    assert printed(command)[:len(shown)] == shown
