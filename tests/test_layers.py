"""Data flows one way through the modules: the package's import graph has no cycle, counting imports
inside functions too (a deferred import is still a dependency), and the core (record, formatting,
reader, writer, sample) imports nothing above it. The graph is read from the source with `ast`,
so a module's dependencies are what it says, not what happened to be imported first."""
import ast
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "modelrecord"
CORE = {"record", "formatting", "reader", "writer", "sample"}


def imports(path: Path) -> set:
    "The package's own modules that the module at `path` imports, anywhere in its body."
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module: found.add(node.module.split(".")[0])
            elif node.level == 1: found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("modelrecord."): found.add(node.module.split(".")[1])
            elif node.module == "modelrecord": found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("modelrecord."))
    return found


def graph() -> dict:
    "Each module of the package (but the hand-written top level and nbdev's index) and the modules it imports."
    modules = {p.stem: p for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "_modidx")}
    return {name: imports(path) & set(modules) - {name} for name, path in modules.items()}


def test_the_import_graph_has_no_cycle():
    order = list(graphlib.TopologicalSorter(graph()).static_order())  # raises CycleError naming the cycle
    assert order.index("record") < order.index("reader") < order.index("tables") < order.index("cli")


def test_the_core_imports_only_the_core():
    above = {name: deps - CORE for name, deps in graph().items() if name in CORE and deps - CORE}
    assert above == {}, f"core modules import modules above the core: {above}"


def test_the_graph_is_read_from_imports_of_every_form(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from .record import a\nimport modelrecord.tables\nfrom modelrecord.score import b\n"
                      "from . import plots\ndef f():\n    from .cli import main\n")
    assert imports(source) == {"record", "tables", "score", "plots", "cli"}
