"""`modelrecord report`: one self-contained HTML page, read with the standard library's HTML parser.

The page must load nothing (every `src` and `href` is a `data:` URI or a link inside the page), hold
no script, show every name from the data as text (a model or case name that is markup is escaped,
never obeyed), and stay under 3 MB for the bundled example. Two pages are drawn, once each: the
bundled example against its key, and a small tree whose model and case names are hostile, through
the command line, compared with itself (its plots drawn, not rendered). What a browser shows is `tests/test_report_browser.py`.
"""
import contextlib
import io
import shutil
from html.parser import HTMLParser

import pytest

from modelrecord.cli import main
from modelrecord import report
from modelrecord.report import report_html
from modelrecord.sample import example_key, example_tree, write_tree

MODEL = "openai:<script>alert(1)</script><img src=x onerror=alert(2)>\u202e"  # markup, and a right-to-left override
CASE = "MT-002<b onmouseover=alert(3)>"


class Page(HTMLParser):
    "What a page holds: each start tag with its attributes, its text, the ids and the `#` links."
    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.ids = [], [], set()
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if dict(attrs).get("id"): self.ids.add(dict(attrs)["id"])

    def handle_data(self, data): self.text.append(data)

    def references(self) -> list:
        "Every address the page names: src, href, srcset, action, poster, data, and url(...) in a style."
        names = ("src", "href", "srcset", "action", "formaction", "poster", "data", "background", "xlink:href")
        return [(tag, name, value) for tag, attrs in self.tags for name, value in attrs.items() if name in names]


def assert_self_contained(page: Page):
    "No script, no handler, and every address a `data:` URI or a link to an id of the page."
    assert not [tag for tag, _ in page.tags if tag in ("script", "iframe", "object", "embed", "link", "base", "form")]
    assert not [(tag, name) for tag, attrs in page.tags for name in attrs if name.startswith("on")]
    for tag, name, value in page.references():
        assert value.startswith("data:") or value.startswith("#"), (tag, name, value[:80])
        if value.startswith("#"): assert value[1:] in page.ids, value
    styles = "".join(attrs.get("style", "") for _, attrs in page.tags)
    assert "url(" not in styles and "@import" not in styles


@pytest.fixture(scope="module")
def example_html() -> str:
    return report_html(example_tree(), example_key(), title="The bundled example")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple:
    """A small tree whose model and case names are markup, reported by the command line against itself:
    `(page, its directory, stdout)`. Its plots are drawn but not rendered to PNG (their text is in the
    image, never in the markup; the example's page has real ones), which keeps this test fast."""
    root = tmp_path_factory.mktemp("hostile")
    tree = write_tree(root / "tree", seed=3, attempts=40, targets=("ee",), repeat=2)
    for path in tree.rglob("*.json*"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("openai:gpt-5", MODEL.replace("\u202e", "\\u202e")).replace("MT-002", CASE),
                        encoding="utf-8")
    written, out = root / "written", io.StringIO()
    written.mkdir()
    argv = ["report", str(tree), "--key", str(tree / "key.json"), "--compare", str(tree), "-o", str(written / "r.html"),
            "--by", "model,case", "--no-cache"]
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(report, "report_plot", lambda figure, alt: report.ReportPlot(alt, "data:image/png;base64,", 1))
        assert main(argv) == 0
    return (written / "r.html").read_text(encoding="utf-8"), written, out.getvalue()


def test_the_example_report_holds_every_section_and_is_under_3_mb(example_html):
    page = Page(example_html)
    assert example_html.startswith("<!DOCTYPE html>") and len(example_html.encode("utf-8")) < 3_000_000
    assert {"runs", "summary", "scores"} <= page.ids and "comparison" not in page.ids
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert len(images) == 8 and all(a["src"].startswith("data:image/png;base64,") and a["alt"] for a in images)
    assert [tag for tag, _ in page.tags].count("table") == 5  # runs, endings, tokens and cost, scores, clustered
    assert ("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}) in page.tags


def test_the_example_report_loads_nothing(example_html):
    page = Page(example_html)
    assert_self_contained(page)
    policy = [a["content"] for tag, a in page.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert policy == ["default-src 'none'; img-src data:; style-src 'unsafe-inline'"]


def test_a_hostile_model_or_case_name_is_shown_as_text_never_obeyed(hostile):
    html, _, _ = hostile
    page = Page(html)
    assert_self_contained(page)
    assert "<script>alert(1)</script>" not in html and "<img src=x" not in html and "<b onmouseover" not in html
    text = "".join(page.text)
    assert "openai:<script>alert(1)</script><img src=x onerror=alert(2)><U+202E>" in text  # as formatting shows it
    assert "\u202e" not in html  # the override is named, never applied
    assert "MT-002<b onmouseover=alert(3)>" in text  # a row of the score table, by model and case
    assert "comparison" in page.ids


def test_the_command_writes_the_page_whole_and_nothing_beside_it(hostile):
    html, written, out = hostile
    assert out == f"{written / 'r.html'}: {len(html.encode('utf-8')):,} bytes, self-contained\n"
    assert sorted(p.name for p in written.iterdir()) == ["r.html"]


def test_a_torn_tree_is_refused_and_nothing_is_written(tmp_path, capsys):
    tree = tmp_path / "torn"
    shutil.copytree(example_tree(), tree)
    shard = sorted(tree.rglob("*.jsonl"))[0]
    shard.write_bytes(shard.read_bytes() + b'{"type": "turn", "oops\n')
    assert main(["report", str(tree), "-o", str(tmp_path / "r.html")]) == 1
    assert "--salvage" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("argv, why", [
    (["--verdict", "clean"], "--verdict needs an answer key"),
    (["--compare-key", "k.json"], "--compare-key needs a tree"),
    (["-o", "/nonexistent/dir/r.html"], "there is no directory"),
])
def test_options_that_cannot_go_together_are_usage_errors(argv, why, capsys):
    full = ["report", str(example_tree()), *argv] + ([] if "-o" in argv else ["-o", "r.html"])
    assert main(full) == 2
    assert why in capsys.readouterr().err


def test_a_missing_extra_exits_2_naming_it(capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "matplotlib" else object())
    assert main(["report", "-o", "r.html"]) == 2
    assert "report needs the explore extra (matplotlib is not installed)" in capsys.readouterr().err


def test_a_page_without_data_is_still_a_page():
    from modelrecord.report import ReportSection, page_html, report_table
    import pandas as pd
    html = page_html("Empty", [], [ReportSection("nothing", "Nothing", [], [report_table("", pd.DataFrame({"a": []}))],
                                                 [])])
    page = Page(html)
    assert_self_contained(page)
    assert "nothing" in page.ids and [t for t, _ in page.tags].count("h3") == 0
