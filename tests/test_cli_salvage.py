"""Every command that reads a tree takes `--salvage` (issue 27): strict by default, with a refusal that
names the flag, and with it the rest of the tree read and the refused lines named on stderr."""
import shutil

import pytest

from modelrecord.cli import main
from modelrecord.reader import shard_paths
from modelrecord.sample import example_key, example_tree


@pytest.fixture(scope="module")
def torn(tmp_path_factory):
    "A copy of the example tree whose first shard's last line is cut short, as by a process killed mid-write."
    tree = tmp_path_factory.mktemp("torn") / "tree"
    shutil.copytree(example_tree(), tree)
    shard = shard_paths(tree)[0]
    with open(shard, "rb+") as file: file.truncate(file.seek(0, 2) - 20)
    return tree


def commands(tree, out):
    "Each command that reads a tree, as it is typed for `tree`."
    return {"summary": ["summary", str(tree)],
            "score": ["score", str(tree), "--key", str(example_key())],
            "export": ["export", str(tree), "--to", str(out)],
            "compare": ["compare", str(tree), str(tree)]}


@pytest.mark.parametrize("command", ["summary", "score", "export", "compare"])
def test_a_torn_line_refuses_strictly_and_names_the_flag(torn, tmp_path, capsys, command):
    assert main([*commands(torn, tmp_path / "out")[command], "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert ".jsonl:" in err and "give --salvage to read every other line" in err
    assert not (tmp_path / "out").exists()  # nothing exported from a refused tree


@pytest.mark.parametrize("command", ["summary", "score", "export", "compare"])
def test_with_salvage_the_rest_is_read_and_the_refused_line_named(torn, tmp_path, capsys, command):
    assert main([*commands(torn, tmp_path / "out")[command], "--salvage"]) == 0
    out, err = capsys.readouterr()
    assert "modelrecord: skipped " in err and "line refused, the rest read" in err
    assert out.strip()
