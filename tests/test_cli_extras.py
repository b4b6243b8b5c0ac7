"""With only the core installed, the commands that need an extra say which one and exit 2 (usage)."""
import subprocess
import sys

import pytest

EXTRAS = ("numpy", "pandas", "pyarrow", "tqdm", "matplotlib", "ipywidgets", "voila")


def core_only(*argv: str) -> subprocess.CompletedProcess:
    "`modelrecord *argv` in a fresh interpreter where no module of an extra can be imported."
    code = ("import sys\n"
            f"sys.modules.update(dict.fromkeys({EXTRAS!r}))  # None in sys.modules: the import fails as if not installed\n"
            "from modelrecord.cli import main\n"
            f"sys.exit(main({list(argv)!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv, extra", [(["summary"], "analysis"), (["export", "somewhere", "--to", "out"], "analysis"),
                                         (["explore"], "explore")])
def test_a_command_needing_an_extra_says_which_and_exits_2(argv, extra):
    ran = core_only(*argv)
    assert ran.returncode == 2, ran.stderr
    assert f"pip install 'modelrecord[{extra}]'" in ran.stderr and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stderr.startswith(f"modelrecord: {argv[0]} needs the {extra} extra (") and ran.stdout == ""


def test_validate_needs_no_extra():
    ran = core_only("validate")
    assert ran.returncode == 0 and "all valid" in ran.stdout, ran.stderr


def test_explore_without_psutil_alone_names_its_extra():
    "psutil (which stops the served page's processes) comes with the explore extra, not with Voila: its absence is named too."
    code = ("import sys\nsys.modules['psutil'] = None\nfrom modelrecord.cli import main\n"
            "sys.exit(main(['explore']))")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 2 and "pip install 'modelrecord[explore]'" in ran.stderr and "Traceback" not in ran.stderr, ran.stderr
