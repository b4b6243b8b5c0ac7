"""The documentation site: built from the notebooks by the README's command, whole, and offline in a browser.

The site is built once (`python tools/build_docs.py --out ...`) and opened in headless Chromium over
http on 127.0.0.1. The explorer page is the page of `nbs/NN_explore.ipynb` once that notebook exists;
until then it is the first chapter with a saved plot, or, while no chapter has one, the page of a
small notebook with a saved plot and a saved widget that this test writes beside copies of the
notebooks (never into nbs/). Screenshots go to test-artifacts/.
"""
import base64, functools, http.server, importlib, inspect, io, re, shutil, subprocess, sys, threading, zlib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
sys.path.insert(0, str(ROOT / "tools"))
import build_docs, nbdocs  # noqa: E402


def build_site(out: Path, nbs: Path = NBS) -> Path:
    "Build the site as the README says, into `out` (README.md left alone)."
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "build_docs.py"), "--out", str(out), "--nbs", str(nbs),
                          "--no-readme"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"the docs build failed:\n{run.stdout}\n{run.stderr}"
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build_site(tmp_path_factory.mktemp("docs") / "_docs")


# ---------------------------------------------------------------------------------------------
# The site, read as files

def test_every_chapter_has_a_page_in_reading_order(site):
    chapters = build_docs.chapters(NBS)
    assert chapters, "no numbered notebook in nbs/"
    assert [int(re.match(r"\d+", p.name)[0]) for p in chapters] == sorted(int(re.match(r"\d+", p.name)[0])
                                                                          for p in chapters)
    home = (site / "index.html").read_text()
    nav = re.search(r'<div class="sidebar-tree">(.*?)</div>', home, re.S)[1]
    links = re.findall(r'href="([\w.-]+)\.html"', nav)
    pages = [p.stem for p in build_docs.markdown_pages(ROOT)]
    assert "model-results" in pages  # the results page publish draws from the committed record
    assert links == [build_docs.page_name(p) for p in chapters] + pages  # every chapter in order, then the pages
    for path in chapters: assert (site / f"{build_docs.page_name(path)}.html").exists()
    for page in pages: assert (site / f"{page}.html").exists()


def test_api_entry_of_read_shards(site):
    page = (site / "reader.html").read_text()
    assert 'id="modelrecord.reader.read_shards"' in page, "no API entry for read_shards"
    entry = page[page.index('id="modelrecord.reader.read_shards"'):]
    text = re.sub(r"<[^>]+>", "", entry[:entry.find('id="modelrecord.reader.', 10)])  # up to the next entry
    assert "read_shards" in text and "errors" in text and "'collect'" in text  # the signature of the live object
    assert "The shards under" in text  # the docstring


def public_api() -> list:
    "`modelrecord.module.name` for every name of each chapter's module `__all__` and every public method or property of its classes."
    names = []
    for path in build_docs.chapters(NBS):
        found = re.search(r"^#\|\s*default_exp\s+(\S+)",
                          "\n".join(c.source for c in nbformat.read(path, as_version=4).cells), re.M)
        if not found: continue
        module = importlib.import_module(f"modelrecord.{found[1]}")
        for name in module.__all__:
            names.append(f"{module.__name__}.{name}")
            obj = getattr(module, name)
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                names += [f"{module.__name__}.{name}.{m}" for m, v in vars(obj).items() if not m.startswith("_")
                          and (inspect.isfunction(v)
                               or isinstance(v, (property, functools.cached_property, classmethod, staticmethod)))]
    return names


def test_every_public_name_and_method_has_an_entry(site):
    "Every name of a module's `__all__` (nbdev's rule) and every public method of its classes is an object of the site's inventory."
    api = public_api()
    assert {"modelrecord.tables.Tables.where", "modelrecord.tables.Tables.priced",
            "modelrecord.writer.Writer.write"} <= set(api)
    inventory = {line.split()[0] for line in _inventory(site)}
    assert [n for n in api if n not in inventory] == []


def _inventory(site: Path) -> list:
    "The objects of the site's Sphinx inventory, one line each."
    data = (site / "objects.inv").read_bytes()
    body = data.split(b"\n", 4)[4]
    return zlib.decompress(body).decode().splitlines()


def test_nothing_is_loaded_from_another_host(site):
    assert build_docs.check_site(site) == []
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert not re.search(r"""<(?:script|img|iframe)\b[^>]*\bsrc=["']?(?:https?:)?//""", text), page
        assert not re.search(r"""<link\b[^>]*\bhref=["']?(?:https?:)?//""", text), page
        assert "fonts.googleapis" not in text, page


def test_readme_is_generated_from_the_index_notebook():
    readme = (ROOT / "README.md").read_text()
    nb = nbdocs.process(nbformat.read(NBS / "index.ipynb", as_version=4))
    assert readme == build_docs.readme_markdown(nb), "README.md is stale: run `python tools/build_docs.py`"
    assert 'pip install -e ".[analysis]" && modelrecord summary' in readme
    assert "python tools/build_docs.py" in readme


def test_the_readme_links_to_notebooks_that_exist():
    "A link of the index notebook to a chapter (`NN_name.ipynb`) is, in the README at the root, a link to `nbs/NN_name.ipynb`."
    links = re.findall(r"\]\(([^)#\s]+\.ipynb)", (ROOT / "README.md").read_text())
    assert "nbs/18a_inspect_example.ipynb" in links
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_the_index_lists_the_top_level():
    "The home page names exactly what `import modelrecord` gives (`__all__`, and the two names imported on first use)."
    import modelrecord
    prose = "\n".join(c.source for c in nbformat.read(NBS / "index.ipynb", as_version=4).cells
                      if c.cell_type == "markdown")
    section = prose[prose.index("## The top level"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section else section  # up to the next heading
    listed = set(re.findall(r"`(?:modelrecord\.)?([A-Za-z_]\w*)`", section)) - {"modelrecord", "__all__"}
    assert listed - {"sample", "summary", "score"} == set(modelrecord.__all__) | {"load", "Tables"}


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = 'pip install -e ".[dev]" && python -m pytest'
    assert command in readme
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci_lines[-1] == command, "the last step of .ci/run must be the README's test command, exactly"


# ---------------------------------------------------------------------------------------------
# What fails the build

def _chapter(tmp_path, *cells) -> Path:
    "A notebooks folder holding the index and one chapter made of `cells`."
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    shutil.copy(NBS / "index.ipynb", nbs)
    shutil.copy(NBS / "01_reader.ipynb", nbs)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Broken\n> a chapter that cannot be "
                                                                                 "published"),
                                                   *cells]), nbs / "05_broken.ipynb")
    return nbs


def _refused(tmp_path, nbs) -> str:
    with pytest.raises(SystemExit) as failure:
        build_docs.build(out=tmp_path / "site", nbs=nbs, write_readme=False)
    return str(failure.value)


def test_a_broken_link_fails_the_build(tmp_path):
    nbs = _chapter(tmp_path, nbformat.v4.new_markdown_cell(
        "See [a chapter](09_nowhere.ipynb), [a heading](01_reader.ipynb#nowhere) and <a href='gone.html'>a page</a>."))
    why = _refused(tmp_path, nbs)
    assert "05_broken.ipynb" in why and "09_nowhere.ipynb" in why and "nowhere" in why and "gone.html" in why


def test_a_saved_error_fails_the_build(tmp_path):
    error = nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])
    nbs = _chapter(tmp_path, nbformat.v4.new_code_cell("1/0", outputs=[error]))
    assert "ZeroDivisionError" in _refused(tmp_path, nbs)


def test_a_resource_from_another_host_fails_the_build(tmp_path):
    nbs = _chapter(tmp_path, nbformat.v4.new_markdown_cell('<img src="https://example.com/logo.png">'))
    assert "loads https://example.com/logo.png from another host" in _refused(tmp_path, nbs)


# ---------------------------------------------------------------------------------------------
# The processing of a notebook

def fetch(path: str,  # where it is
          tries: int = 3) -> "bytes":
    "Read `path`."


def test_an_entry_is_nbdev_show_doc_of_the_live_object():
    from modelrecord.tables import Tables
    from nbdev.showdoc import show_doc
    entry = show_doc(fetch, renderer=functools.partial(nbdocs.MystRenderer, module="lib.thing"))._repr_markdown_()
    assert entry.startswith("```{py:function} fetch(path: str, tries: int = 3) -> bytes\n:module: lib.thing\n")
    assert "Read `path`." in entry and ":param path: where it is" in entry
    entry = show_doc(Tables, renderer=functools.partial(nbdocs.MystRenderer, module="modelrecord.tables", index=False,
                                                        skip={"Tables.priced"}))._repr_markdown_()
    # a longer fence: the methods are inside
    assert entry.startswith("````{py:class} Tables(") and ":no-index:" in entry
    assert "```{py:method} where(" in entry and "{py:method} priced" not in entry  # priced: shown by its own cell
    fields = nbdocs.class_fields(importlib.import_module("modelrecord.record").Attempt)
    assert ("session", "str", '""',
            "required unless the attempt never reached a session (see `line_problem`)") in fields


def _processed(*cells) -> list:
    "The cells of a chapter of `modelrecord.tables` made of `cells`, after processing (source of each)."
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T\n> s"),
                                         nbformat.v4.new_code_cell("#| default_exp tables"),
                                         *cells])
    return [c.source for c in nbdocs.process(nb).cells]


def test_directives_are_honoured():
    sources = _processed(nbformat.v4.new_code_cell("#| hide\nsecret = 1"),
                         nbformat.v4.new_code_cell("#| exporti\ndef internal(): pass"),
                         nbformat.v4.new_code_cell("shown = 1\nhidden = 2  #| hide_line"),
                         nbformat.v4.new_code_cell("#| export\nPARALLEL_BYTES = 64 << 20\ndef load(path): pass"))
    assert not any("secret" in s or "internal" in s or "default_exp" in s or "hidden" in s for s in sources)
    assert "shown = 1" in sources
    # the constant, as written
    assert sources[-2].startswith("```{py:data} PARALLEL_BYTES\n:module: modelrecord.tables")
    assert "PARALLEL_BYTES = 64 << 20" in sources[-2]
    assert sources[-1].startswith("```{py:function} load(path")  # nbdev's add_show_docs, then the live object
    assert ":module: modelrecord.tables" in sources[-1] and "Tables" in sources[-1]  # the docstring, linked


def test_show_doc_places_an_entry():
    "As in nbdev, `show_doc(name)` shows the entry there, and only there; a name from another chapter is not indexed twice."
    sources = _processed(nbformat.v4.new_code_cell("#| export\nclass Tables:\n    def where(self): pass"),
                         nbformat.v4.new_markdown_cell("Prose about `Tables`."),
                         nbformat.v4.new_code_cell("show_doc(Tables.where)"),
                         nbformat.v4.new_code_cell("show_doc(read_shards)"))
    assert sources[1].startswith("````{py:class} Tables(") and "{py:method} where" not in sources[1]
    assert sources[2] == "Prose about {py:obj}`Tables <modelrecord.tables.Tables>`."
    assert sources[3].startswith("```{py:method} Tables.where(attempts") and ":no-index:" not in sources[3]
    assert sources[4].startswith("```{py:function} read_shards(path") and ":module: modelrecord.reader\n:no-index:" in sources[4]
    with pytest.raises(nbdocs.NotebookError, match="no public nowhere"):
        _processed(nbformat.v4.new_code_cell("show_doc(nowhere)"))


def _png(title: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4, 2.5))
    ax.bar(["a", "b"], [3, 5], color=["#2e7d32", "#ef6c00"])
    ax.set_title(title)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def plot_notebook() -> nbformat.NotebookNode:
    "A chapter as an explorer notebook saves it: a plot, and a widget whose saved state holds a plot."
    state = {
        "box": {"model_name": "VBoxModel", "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
                "state": {"children": ["IPY_MODEL_pick", "IPY_MODEL_out"]}},
        "pick": {"model_name": "DropdownModel", "model_module": "@jupyter-widgets/controls",
                 "model_module_version": "2.0.0",
                 "state": {"_options_labels": ["a", "b"], "index": 1, "description": "model"}},
        "out": {"model_name": "OutputModel", "model_module": "@jupyter-widgets/output", "model_module_version": "1.0.0",
                "state": {"outputs": [{"output_type": "display_data", "metadata": {},
                                       "data": {"image/png": _png("chosen: b"), "text/plain": "<Figure>"}}]}}}
    view = {"version_major": 2, "version_minor": 0, "model_id": "box"}
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Explore\n> A saved plot and a saved widget, as an explorer leaves them."),
               nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
                   "display_data", {"image/png": _png("completed by model"), "text/plain": "<Figure>"})]),
               nbformat.v4.new_code_cell("explorer()", outputs=[nbformat.v4.new_output(
                   "display_data", {nbdocs.WIDGET_VIEW: view, "text/plain": "VBox(...)"})])],
        metadata={"widgets": {nbdocs.WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": state}}})


def test_a_widget_is_shown_as_saved():
    nb = nbdocs.process(plot_notebook())
    outputs = nb.cells[-1].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the Output widget's plot
    assert any("<code>b</code>" in o.get("data", {}).get("text/html", "") for o in outputs)  # the chosen option
    assert not any(nbdocs.WIDGET_VIEW in o.get("data", {}) for o in outputs) and "widgets" not in nb.metadata


# ---------------------------------------------------------------------------------------------
# In a browser, offline

def explorer_page(site: Path, tmp_path_factory) -> tuple[Path, str]:
    "The site and page to check as the explorer: NN_explore's, else a chapter with a plot, else a fixture's."
    explore = [p for p in build_docs.chapters(NBS) if build_docs.page_name(p) == "explore"]
    if explore: return site, "explore.html"
    for path in build_docs.chapters(NBS):
        page = site / f"{build_docs.page_name(path)}.html"
        if re.search(r'<div class="cell_output[^>]*>.*?<img ', page.read_text(), re.S): return site, page.name
    nbs = tmp_path_factory.mktemp("nbs-with-plot")  # the home page and the fixture chapter are enough
    shutil.copy(NBS / "index.ipynb", nbs)
    nbformat.write(plot_notebook(), nbs / "99_explore.ipynb")
    return build_site(tmp_path_factory.mktemp("docs-with-plot") / "_docs", nbs), "explore.html"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass


@pytest.fixture(scope="module")
def served(site, tmp_path_factory):
    "`(url of the site, url of the explorer page)`, each served over http on 127.0.0.1."
    explorer_site, explorer = explorer_page(site, tmp_path_factory)
    servers = []
    for root in {site, explorer_site}:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append((root, server))
    url = {root: f"http://127.0.0.1:{server.server_address[1]}/" for root, server in servers}
    yield url[site], url[explorer_site] + explorer
    for _, server in servers: server.shutdown(); server.server_close()


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)")
def test_site_in_a_browser(served):
    from playwright.sync_api import sync_playwright
    home, explorer = served
    ARTIFACTS.mkdir(exist_ok=True)
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--headless", "--no-sandbox", "--disable-gpu",
                                          "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console",
                    lambda m: m.type == "error" and problems.append(f"console: {m.text} ({m.location.get('url')})"))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            # a request the next page's navigation cancels (the favicon, often) is aborted, not failed
            page.on("requestfailed", lambda r: r.failure == "net::ERR_ABORTED"
                    or problems.append(f"failed request: {r.url} ({r.failure})"))
            page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))
            page.on("request",
                    lambda r: re.match(r"(https?|wss?)://127\.0\.0\.1[:/]", r.url) or r.url.startswith("data:")
                    or problems.append(f"request to another host: {r.url}"))

            page.goto(home + "index.html", wait_until="networkidle")
            nav = page.locator(".sidebar-tree a.reference")
            assert nav.count() == len(build_docs.chapters(NBS)) + len(build_docs.markdown_pages(ROOT))
            page.screenshot(path=str(ARTIFACTS / "docs-home.png"))

            page.goto(home + "reader.html", wait_until="networkidle")
            entry = page.locator("[id='modelrecord.reader.read_shards']")
            assert entry.is_visible() and "read_shards" in entry.inner_text()
            page.evaluate("document.getElementById('modelrecord.reader.read_shards').scrollIntoView({behavior: "
                          "'instant'})")
            page.evaluate("window.scrollBy(0, -80)")
            page.screenshot(path=str(ARTIFACTS / "docs-read_shards.png"))

            page.goto(home + "search.html?q=read_shards", wait_until="networkidle")
            hit = page.locator("#search-results a[href*='modelrecord.reader.read_shards']")
            hit.first.wait_for(timeout=10_000)  # the search index is part of the site: no server, no network
            page.screenshot(path=str(ARTIFACTS / "docs-search.png"))

            for path in build_docs.chapters(NBS):  # every chapter opens cleanly, its plots loaded
                page.goto(home + f"{build_docs.page_name(path)}.html", wait_until="networkidle")
                loaded = page.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
                assert all(loaded), f"an image of {path.name}'s page did not load"

            page.goto(explorer, wait_until="networkidle")
            plots = page.locator(".cell_output img")
            assert plots.count() > 0, (f"{explorer} shows no plot: save its notebook executed, with its widgets'"
                                       " state (`jupyter nbconvert --to notebook --execute --inplace` does both)")
            plots.first.scroll_into_view_if_needed()
            loaded = page.evaluate("[...document.querySelectorAll('.cell_output img')].map(i => i.complete && "
                                   "i.naturalWidth > 0)")
            assert all(loaded), f"a plot of {explorer} did not load: {loaded}"
            page.screenshot(path=str(ARTIFACTS / "docs-explore.png"), full_page=True)
        finally:
            browser.close()
    assert problems == []
