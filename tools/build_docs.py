#!/usr/bin/env python
"""Build the documentation site from the notebooks into `_docs/`, and `README.md` from `nbs/index.ipynb`.

    python tools/build_docs.py             # README.md and _docs/ (open _docs/index.html)
    python tools/build_docs.py --serve     # the same, then serve _docs/ on http://127.0.0.1:8000

The home page is `nbs/index.ipynb`; every numbered notebook `nbs/NN_name.ipynb` is a chapter, in the
order of its number, at `_docs/name.html` (nbdev's address for it). The notebooks are not executed:
their saved outputs are shown, so execute a notebook (and save it) before building.

The build fails (exit 1) on a notebook that cannot be published (invalid, or with a saved error),
a link to a page or heading that does not exist, or a page that would load anything from another host.
"""
import argparse, configparser, contextlib, copy, html.parser, os, re, shutil, sys, tempfile, time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat

ROOT = Path(__file__).resolve().parents[1]
# nbdocs, and the package of this checkout (its API entries are read live)
sys.path[:0] = [str(ROOT / "tools"), str(ROOT)]
import nbdocs  # noqa: E402

CONF_DIR = Path(__file__).resolve().parent / "docs"


def settings(root: Path = ROOT) -> configparser.SectionProxy:
    cfg = configparser.ConfigParser(delimiters=["="])
    cfg.read(root / "settings.ini", encoding="utf-8")
    return cfg["DEFAULT"]


def chapters(nbs: Path) -> list:
    "The numbered notebooks of `nbs`, in reading order (their number, then their name)."
    found = [p for p in nbs.glob("*.ipynb") if re.match(r"\d+[a-z]?_", p.name)]
    return sorted(found, key=lambda p: (int(re.match(r"\d+", p.name)[0]), p.name))


def page_name(path: Path) -> str:
    "nbdev's address of a notebook: its name without the number prefix (`01_reader` -> `reader`)."
    return re.sub(r"^\d+[a-z]?_", "", path.stem) if path.stem != "index" else "index"


def _relink(source: str, pages: dict) -> str:
    "Point links at a notebook (`NN_name.ipynb`) or its page (`name.html`, nbdev's address) to the staged `name.ipynb`."
    names = set(pages.values())
    def sub(m):
        if m[3] == "ipynb": return m[1] + pages.get(m[2], m[2]) + ".ipynb" + m[4]
        page = pages.get(m[2], m[2])
        return m[1] + page + ".ipynb" + m[4] if page in names else m[0]
    return re.sub(r"(\]\(\s*(?:\./)?)([\w.-]+?)\.(ipynb|html)([#)\s])", sub, source)


def stage(nbs: Path, out: Path, lib_name: str) -> tuple[list, "nbformat.NotebookNode"]:
    "Write the processed notebooks into `out`; return the chapters' `(page, title, summary)` and the README notebook."
    index_path = nbs / "index.ipynb"
    paths = ([index_path] if index_path.exists() else []) + chapters(nbs)
    notebooks = {}
    for path in paths:
        try:
            nb = nbformat.read(path, as_version=4)
            nbformat.validate(nb)
        except Exception as e:
            raise nbdocs.NotebookError(f"{path}: not a valid notebook: {e}") from e
        notebooks[path] = nb
    pages = {p.stem: page_name(p) for p in paths}
    for name in set(pages.values()):
        same = [stem for stem, page in pages.items() if page == name]
        if len(same) > 1: raise nbdocs.NotebookError(f"{' and '.join(same)} would both be the page {name}.html")
    toc, readme_nb = [], None
    for path, nb in notebooks.items():
        processed = nbdocs.process(nb, name=str(path))
        if path == index_path: readme_nb = copy.deepcopy(processed)  # before relinking: the README links to notebooks
        for cell in processed.cells:
            if cell.cell_type == "markdown": cell.source = _relink(cell.source, pages)
        if path != index_path:
            title, summary = notebook_title(nb)
            if not title: raise nbdocs.NotebookError(f"{path}: its first markdown cell has no `# Title`")
            toc.append((pages[path.stem], title, summary))
        notebooks[path] = processed
    sources = {p: f"{p}.ipynb" for p, _, _ in toc}
    for page in markdown_pages(nbs.parent):  # after the chapters, as written (a page publish draws is not edited)
        text = page.read_text(encoding="utf-8")
        title, summary = notebook_title(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)]))
        if not title: raise nbdocs.NotebookError(f"{page}: its first line is not a `# Title`")
        (out / page.name).write_text(text, encoding="utf-8")
        toc.append((page.stem, title, summary))
        sources[page.stem] = page.name
    for path, nb in notebooks.items():
        if path == index_path:  # the home page ends with the chapters, and holds the navigation's order
            contents = "## Contents\n\n" + "\n".join(f"- [{t}]({sources[p]}): {s}" for p, t, s in toc)
            toctree = "```{toctree}\n:hidden:\n:maxdepth: 2\n\n" + "\n".join(p for p, _, _ in toc) + "\n```"
            nb.cells.append(nbformat.v4.new_markdown_cell(contents + "\n\n" + toctree))
        nbformat.write(nb, out / f"{pages[path.stem]}.ipynb")
    return toc, readme_nb


def markdown_pages(root: Path) -> list:
    "The Markdown pages of the site beside the chapters: `docs/*.md`, such as the results page `modelrecord publish` draws."
    return sorted((root / "docs").glob("*.md"))


def notebook_title(nb) -> tuple[str, str]:
    "The `# Title` and `> summary` of a notebook's first markdown cell."
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    title, summary = re.search(r"^#\s+(.+?)\s*$", first, re.M), re.search(r"^>\s*(.+?)\s*$", first, re.M)
    return (title[1] if title else ""), (summary[1] if summary else "")


def _chapter_links(source: str, folder: str) -> str:
    "Point links at a chapter (`NN_name.ipynb`, beside the index notebook) at the same file seen from the root."
    return re.sub(r"(\]\(\s*)(?:\./)?(\d+[a-z]?_[\w.-]+?\.ipynb[#)\s])", lambda m: f"{m[1]}{folder}/{m[2]}", source)


def readme_markdown(nb, source: str = "nbs/index.ipynb") -> str:
    "GitHub markdown for the processed index notebook: prose, code and text or HTML outputs (no images)."
    parts = [f"<!-- Generated from {source} by tools/build_docs.py: edit the notebook, not this file. -->"]
    folder = Path(source).parent.as_posix()  # a link to a chapter is relative to the notebooks, the README's to the root
    for cell in nb.cells:
        if cell.cell_type == "markdown": parts.append(re.sub(r"\{py:\w+\}`([^`<]+?)(?: <[^`]+>)?`", r"`\1`",
                                                             _chapter_links(cell.source, folder)).strip())
        if cell.cell_type != "code": continue
        parts.append(f"```python\n{cell.source.strip()}\n```" if cell.source.strip() else "")
        for out in cell.get("outputs", []):
            data, text = out.get("data", {}), out.get("text", "") or out.get("data", {}).get("text/plain", "")
            if "text/markdown" in data: parts.append(data["text/markdown"].strip())
            elif any(k.startswith("image/") for k in data): continue
            elif "text/html" in data: parts.append(data["text/html"].strip())
            elif text.strip(): parts.append(f"```\n{text.rstrip()}\n```")
    return "\n\n".join(p for p in parts if p) + "\n"


def readme(nb, dest: Path):
    "Write README.md from the processed index notebook (`#| hide` cells and others left out, as nbdev_readme does)."
    dest.write_text(readme_markdown(nb), encoding="utf-8")


def sphinx(src: Path, out: Path, work: Path, cfg, sources: dict, verbose: bool = False) -> list:
    "Run Sphinx on the staged notebooks; return its warnings (a broken link, a bad directive), naming the notebooks."
    import io
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils
    os.environ.update(DOCS_PROJECT=cfg.get("title", cfg.get("lib_name", "")),
                      DOCS_AUTHOR=cfg.get("author", ""), DOCS_COPYRIGHT=cfg.get("copyright", ""))
    log = io.StringIO()
    with patch_docutils(str(CONF_DIR)), docutils_namespace():
        app = Sphinx(str(src), str(CONF_DIR), str(out), str(work / "doctrees"), "html", freshenv=True,
                     status=sys.stdout if verbose else None, warning=log, keep_going=True)
        app.build(force_all=True)
        status = app.statuscode
    warnings = [re.sub(r"\x1b\[[0-9;]*m", "", w) for w in log.getvalue().splitlines() if w.strip()]
    named = []
    # a staged page's path and MyST-NB's line number (cell * 10000 + line) mean little to a reader
    for line in warnings:
        line = re.sub(re.escape(str(src)) + r"/([\w.-]+)\.ipynb(?::\d+)?",
                      lambda m: sources.get(m[1], m[1] + ".ipynb"), line)
        named.append(line.replace(str(src) + "/", ""))
    if status and not named:
        named.append(f"Sphinx stopped (status {status}): run `python tools/build_docs.py --verbose`")
    return named


# ---------------------------------------------------------------------------------------------
# The built site: links that work, and nothing from another host

class _Refs(html.parser.HTMLParser):
    "The ids a page defines, the links it follows and the resources it loads."
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.loads = set(), [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"): self.ids.add(a["id"])
        if tag == "a" and a.get("name"): self.ids.add(a["name"])
        if tag == "a" and a.get("href"): self.links.append(a["href"])
        if tag in ("script", "img", "iframe", "audio", "video", "source", "embed") and a.get("src"):
            self.loads.append(a["src"])
        if tag == "link" and a.get("href") and set((a.get("rel") or "").split()) - {"next", "prev", "index", "search",
                                                                                    "canonical"}:
            self.loads.append(a["href"])
        if tag == "object" and a.get("data"): self.loads.append(a["data"])
        if a.get("style"): self.loads += re.findall(r"url\(\s*['\"]?([^'\")]+)", a["style"])


def _external(url: str) -> bool:
    "Whether loading `url` reaches for another host (`data:` and the site's own files do not)."
    parts = urlsplit(url)
    return bool(parts.netloc) or parts.scheme not in ("", "data", "about", "blob")


def check_site(site: Path) -> list:
    "Problems with the built `site`: a link to a missing page or anchor, or a resource from another host."
    pages, problems = {}, []
    for page in site.rglob("*.html"):
        refs = _Refs()
        refs.feed(page.read_text(encoding="utf-8", errors="replace"))
        pages[page.resolve()] = refs
    for css in list(site.rglob("*.css")) + list(site.rglob("*.js")):
        text = css.read_text(encoding="utf-8", errors="replace")
        for url in re.findall(r"""(?:url\(\s*['"]?|@import\s+['"])((?:https?:)?//[^'")\s]+)""", text):
            problems.append(f"{css.relative_to(site)}: loads {url} from another host")
    for page, refs in pages.items():
        rel = page.relative_to(site.resolve())
        for url in refs.loads:
            if _external(url): problems.append(f"{rel}: loads {url[:120]} from another host"); continue
            parts = urlsplit(url)
            if parts.scheme or not parts.path: continue
            if not (page.parent / unquote(parts.path)).resolve().exists():
                problems.append(f"{rel}: loads {url[:120]}, which is not in the site")
        for url in refs.links:
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith("mailto:"): continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir(): target = target / "index.html"
            if not target.exists(): problems.append(f"{rel}: links to {url}, which is not in the site"); continue
            if parts.fragment and target in pages and unquote(parts.fragment) not in pages[target].ids:
                problems.append(f"{rel}: links to {url}, but that page has no #{parts.fragment}")
    return sorted(set(problems))


def build(root: Path = ROOT, out: Path = None, write_readme: bool = True, nbs: Path = None, keep: Path = None,
          verbose: bool = False) -> dict:
    "Build the site (and README.md); raise SystemExit with the reasons when it cannot be published."
    cfg = settings(root)
    nbs = Path(nbs) if nbs else root / cfg.get("nbs_path", "nbs")
    out = Path(out) if out else root / cfg.get("doc_path", "_docs")
    lib_name = cfg.get("lib_name", "modelrecord")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="docs-") as work:
        work = Path(work)
        src = work / "src"
        src.mkdir()
        try:
            # nbdev reads settings.ini from here
            with contextlib.chdir(root): toc, readme_nb = stage(nbs, src, lib_name)
        except nbdocs.NotebookError as e: raise SystemExit(f"docs: {e}")
        if write_readme and readme_nb is not None: readme(readme_nb, root / "README.md")
        sources = {page_name(p) if p.suffix == ".ipynb" else p.stem: str(p.relative_to(root) if p.is_relative_to(root) else p)
                   for p in [nbs / "index.ipynb"] + chapters(nbs) + markdown_pages(nbs.parent)}
        html = work / "site" / "html"  # MyST-NB writes beside Sphinx's output folder: keep that in `work`
        problems = sphinx(src, html, work, cfg, sources, verbose)
        if keep: shutil.rmtree(keep, ignore_errors=True); shutil.copytree(src, keep)
        if not (html / "index.html").exists():
            raise SystemExit("docs: Sphinx made no site:\n  " + "\n  ".join(problems))
        (html / ".buildinfo").unlink(missing_ok=True)
        if (html / "_sources").is_dir() and not any((html / "_sources").iterdir()): (html / "_sources").rmdir()
        (html / ".nojekyll").touch()
        problems += [re.sub(r"^([\w.-]+)\.html:",
                            lambda m: f"{m[1]}.html ({sources[m[1]]}):" if m[1] in sources else m[0], p)
                     for p in check_site(html)]
        if out.exists(): shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(html), str(out))
    if problems: raise SystemExit("docs: the site cannot be published:\n  " + "\n  ".join(problems))
    return {"pages": ["index"] + [p for p, _, _ in toc], "seconds": time.perf_counter() - started, "out": out}


def serve(site: Path, port: int):
    import functools, http.server
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"serving {site} on http://127.0.0.1:{port}/ (Ctrl-C stops)")
        try: server.serve_forever()
        except KeyboardInterrupt: pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="where the site goes (default: doc_path of settings.ini, _docs)")
    parser.add_argument("--nbs", type=Path, help="the notebooks (default: nbs_path of settings.ini, nbs)")
    parser.add_argument("--no-readme", action="store_true", help="leave README.md as it is")
    parser.add_argument("--keep", type=Path, help="keep the processed notebooks Sphinx read in this folder")
    parser.add_argument("--verbose", action="store_true", help="show Sphinx's progress and tracebacks")
    parser.add_argument("--serve", action="store_true", help="serve the site on 127.0.0.1 after building it")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    result = build(out=args.out, write_readme=not args.no_readme, nbs=args.nbs, keep=args.keep,
                   verbose=args.verbose)
    print(f"docs: {len(result['pages'])} pages ({', '.join(result['pages'])}) in {result['out']}"
          f" in {result['seconds']:.1f}s")
    if args.serve: serve(result["out"], args.port)


if __name__ == "__main__":
    main()
