"""Turn the saved notebooks into the pages of the documentation site and the README, without running them.

nbdev's own pipeline (`nbdev_proc_nbs`, then Quarto) re-runs the export and `show_doc` cells of
every notebook from `_proc/`, and here it first tries to install Quarto and the package. This
module does the same job from the saved notebooks alone:

- directives are honoured as nbdev and Quarto honour them (`hide`, `include: false`, `echo: false`,
  `output: false`, `export`, `exports`, `exporti`, `default_exp`, `filter_stream`, `hide_line`);
- every `#| export` cell is replaced by API entries for the public names it defines (the names
  nbdev puts in `__all__`), written from the cell's own source: the signature as the author wrote it,
  the docstring, and the inline (docments) comments of parameters and fields;
- saved outputs are kept as they are (tables, plots, text); an ipywidgets view is replaced by what
  its saved state shows (an `Output` widget's plots and tables), since no kernel serves the site;
- names in backticks that are public names of the package link to their API entry.

Nothing is imported from the package and no cell is executed, so a page shows exactly what the
committed notebook holds, and the build takes seconds.
"""
import ast, copy, functools, io, re, tokenize

import nbformat

WIDGET_VIEW, WIDGET_STATE = "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json"


# ---------------------------------------------------------------------------------------------
# Directives

_DIRECTIVE = re.compile(r"^\s*#\s*\|\s*(.*?)\s*$")


def split_directives(source: str) -> tuple[dict, str]:
    "`({directive: [args]}, source without them)` for the leading `#| ...` lines of a code cell."
    lines, directives = source.splitlines(), {}
    i = 0
    while i < len(lines) and (lines[i].strip() == "" or _DIRECTIVE.match(lines[i])):
        if lines[i].strip():
            words = _DIRECTIVE.match(lines[i])[1].split()
            if words: directives[words[0].rstrip(":").lower()] = words[1:]
        i += 1
    return directives, "\n".join(lines[i:])


def _false(directives, name) -> bool:
    return name in directives and (directives[name] or ["true"])[0].lower() == "false"


def _true(directives, name) -> bool:
    return name in directives and (directives[name] or ["true"])[0].lower() == "true"


# ---------------------------------------------------------------------------------------------
# API entries, read from an export cell's source

def _comments(src: str) -> dict:
    "Line number (1-based) -> the text of the comment that ends that line."
    found = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.COMMENT: found[tok.start[0]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError, SyntaxError): pass
    return found


@functools.lru_cache(maxsize=64)
def _lines(src: str) -> list:
    return src.splitlines(True)


def _seg(src, node) -> str:
    "The source of `node` as the author wrote it, on one line (as `ast.get_source_segment`, without splitting `src` each time)."
    lines = _lines(src)
    try:
        first, last = lines[node.lineno - 1].encode(), lines[node.end_lineno - 1].encode()
        if node.lineno == node.end_lineno: text = first[node.col_offset:node.end_col_offset].decode()
        else:
            middle = "".join(lines[node.lineno:node.end_lineno - 1])
            text = first[node.col_offset:].decode() + middle + last[:node.end_col_offset].decode()
    except (AttributeError, IndexError, TypeError, UnicodeDecodeError): text = ast.unparse(node)
    return " ".join(text.split()) if "\n" in text else text


def _decorator(node) -> str:
    return ast.unparse(node.func if isinstance(node, ast.Call) else node)


def _targets(node) -> list:
    targets = [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else node.targets
    return [t for target in targets for t in getattr(target, "elts", [target]) if isinstance(t, ast.Name)]


def public_names(tree: ast.Module) -> list:
    "The names nbdev's `make_all` puts in `__all__` for these statements: not `_`-prefixed, or listed in `_all_`."
    names, listed = [], []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not any(_decorator(d).startswith("patch") for d in node.decorator_list): names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in _targets(node):
                if t.id == "_all_" and isinstance(node.value, (ast.List, ast.Tuple)):
                    listed += [getattr(e, "value", getattr(e, "id", None)) for e in node.value.elts]
                else: names.append(t.id)
    names = [n for n in names if not n.startswith("_")] + [n for n in listed if isinstance(n, str) and n]
    return list(dict.fromkeys(names))


def _params(src, comments, args: ast.arguments, skip_first=False) -> list:
    "`[(text, name, comment)]` for each parameter of a def (and the bare `*` and `/` markers)."
    marks = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for a, d in zip(positional, defaults): marks.append((a, d, ""))
    if args.posonlyargs: marks.insert(len(args.posonlyargs), (None, None, "/"))
    if skip_first and positional: marks = [m for m in marks if m[0] is not positional[0]]
    if args.vararg: marks.append((args.vararg, None, "*"))
    elif args.kwonlyargs: marks.append((None, None, "*"))
    marks += [(a, d, "") for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg: marks.append((args.kwarg, None, "**"))
    last_on_line = {(d or a).end_lineno: a.arg for a, d, _ in marks if a is not None}
    rows = []
    for a, d, star in marks:
        if a is None: rows.append((star, None, "")); continue
        ann = _seg(src, a.annotation) if a.annotation is not None else None
        default = _seg(src, d) if d is not None else None
        text = star + a.arg + (f": {ann}" if ann else "") + ((" = " if ann else "=") + default if default else "")
        end = (d or a).end_lineno  # a comment documents the last parameter of its line (docments)
        rows.append((text, a.arg, comments.get(end, "") if last_on_line.get(end) == a.arg else ""))
    return rows


class Entry:
    "One API entry: a Python-domain directive with a signature, a docstring, documented parameters and fields."
    def __init__(self, directive, name, signature="", doc="", params=(), fields=(), options=(), children=(), bases=()):
        self.directive, self.name, self.signature, self.doc = directive, name, signature, doc
        self.params, self.fields, self.options = list(params), list(fields), list(options)
        self.children, self.bases = list(children), list(bases)


def _def_entry(src, comments, node, owner=None) -> Entry:
    decorators = {_decorator(d) for d in node.decorator_list}
    method = owner is not None
    params = _params(src, comments, node.args, skip_first=method and "staticmethod" not in decorators)
    returns = _seg(src, node.returns) if node.returns is not None else ""
    options = [":async:"] if isinstance(node, ast.AsyncFunctionDef) else []
    if method and decorators & {"property", "cached_property", "functools.cached_property"}:
        return Entry("py:property", node.name, doc=ast.get_docstring(node) or "",
                     options=[f":type: {returns}"] if returns else [])
    if "classmethod" in decorators: options.append(":classmethod:")
    if "staticmethod" in decorators: options.append(":staticmethod:")
    signature = f"({', '.join(p[0] for p in params)})" + (f" -> {returns}" if returns else "")
    return Entry("py:method" if method else "py:function", node.name, signature, ast.get_docstring(node) or "",
                 [(n, c) for _, n, c in params if n and c], options=options)


def _class_entry(src, comments, node) -> Entry:
    bases = [_seg(src, b) for b in node.bases if not _seg(src, b).split(".")[-1].startswith("_")]
    fields, init, children = [], None, []
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and not item.target.id.startswith("_"):
            default = _seg(src, item.value) if item.value is not None else ""
            fields.append((item.target.id, _seg(src, item.annotation), default, comments.get(item.end_lineno, "")))
        elif isinstance(item, ast.FunctionDef) and item.name == "__init__": init = item
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
            children.append(_def_entry(src, comments, item, owner=node.name))
    params = _params(src, comments, init.args, skip_first=True) if init else []
    signature = f"({', '.join(p[0] for p in params)})" if init else ""
    return Entry("py:class", node.name, signature, ast.get_docstring(node) or "",
                 [(n, c) for _, n, c in params if n and c], fields, children=children, bases=bases)


def cell_entries(src: str) -> list:
    """What documents an export cell, in source order: an `Entry` per public function, class or
    patched method, and `("code", names, text)` for consecutive public assignments (shown as written)."""
    return copy.deepcopy(_cell_entries(src))  # a copy: a caller may drop an entry's children


@functools.lru_cache(maxsize=1024)
def _cell_entries(src: str) -> list:
    tree = ast.parse(src)
    comments, lines, public = _comments(src), src.splitlines(), set(public_names(tree))
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            patched = any(_decorator(d).startswith("patch") for d in node.decorator_list)
            owner = _seg(src, node.args.args[0].annotation) if node.args.args and node.args.args[0].annotation else ""
            if patched and owner and not owner.strip("'\"").startswith("_") and not node.name.startswith("_"):
                entry = _def_entry(src, comments, node, owner=owner)
                entry.name, entry.directive = f"{owner}.{node.name}", entry.directive.replace("py:method", "py:function")
                out.append(entry)
            elif node.name in public: out.append(_def_entry(src, comments, node))
        elif isinstance(node, ast.ClassDef) and node.name in public:
            out.append(_class_entry(src, comments, node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            names = [t.id for t in _targets(node) if t.id in public]
            if not names: continue
            text = "\n".join(lines[node.lineno - 1:node.end_lineno])
            if out and isinstance(out[-1], tuple): out[-1] = ("code", out[-1][1] + names, out[-1][2] + "\n" + text)
            else: out.append(("code", names, text))
    return out


def _cell(text: str) -> str:
    "Escape `text` for a cell of a markdown table."
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    "`text` as inline code (a longer run of backticks when it holds one)."
    fence = "``" if "`" in text else "`"
    return f"{fence}{' ' if fence == '``' else ''}{text}{' ' if fence == '``' else ''}{fence}"


def entry_markdown(entry: Entry, module: str, linker=None, depth: int = 0, no_index: bool = False) -> str:
    """MyST markdown for an API entry (the Python domain gives it an anchor, an index entry and a search entry;
    `no_index` for a second showing of an entry documented on another page)."""
    link = linker or (lambda s: s)
    opts = ([f":module: {module}"] if depth == 0 else []) + entry.options + ([":no-index:"] if no_index else [])
    body = []
    if entry.bases: body.append("Bases: " + ", ".join(link(_code(b)) for b in entry.bases))
    if entry.doc: body.append(link(entry.doc))
    if entry.params: body.append("\n".join(f":param {n}: {link(c)}" for n, c in entry.params))
    if entry.fields:  # a column only when some field has something in it
        columns = [("field", 0, True), ("type", 1, True), ("default", 2, any(f[2] for f in entry.fields)),
                   ("", 3, any(f[3] for f in entry.fields))]
        shown = [(head, i) for head, i, keep in columns if keep]
        cells = lambda f: [_code(f[0]), link(_code(f[1])), _code(f[2]) if f[2] else "", link(f[3])]
        rows = ["| " + " | ".join(h for h, _ in shown) + " |", "|" + "---|" * len(shown)]
        rows += ["| " + " | ".join(_cell(cells(f)[i]) for _, i in shown) + " |" for f in entry.fields]
        body.append("\n".join(rows))
    for child in entry.children: body.append(entry_markdown(child, module, linker, depth + 1, no_index))
    text = "\n\n".join(body)
    fence = "`" * max([3] + [len(run) + 1 for run in re.findall(r"`{3,}", text)])  # longer than any fence inside
    head = f"{fence}{{{entry.directive}}} {entry.name}{entry.signature}"
    return "\n".join([head] + opts + ["", text, fence])


def constants_markdown(names: list, text: str, module: str, show_code: bool = True) -> str:
    "The source of public assignments, with an index entry and anchor for each name they define."
    targets = "\n".join(f"```{{py:data}} {n}\n:module: {module}\n:no-typesetting:\n```" for n in names)
    if not show_code: return targets
    fence = "`" * max([3] + [len(run) + 1 for run in re.findall(r"`{3,}", text)])
    return f"{targets}\n\n{fence}python\n{text}\n{fence}".lstrip("\n")


# ---------------------------------------------------------------------------------------------
# Widgets: what a saved ipywidgets view shows, without a kernel

def _widget_outputs(model_id: str, state: dict, seen=None) -> list:
    "The static outputs that stand for the widget `model_id` (and its children) in the saved state."
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state: return []
    seen.add(model_id)
    model = state[model_id]
    name, st = model.get("model_name", ""), model.get("state", {})
    if name == "OutputModel": return [copy.deepcopy(o) for o in st.get("outputs", [])]
    children = [c[len("IPY_MODEL_"):] for c in st.get("children", []) if isinstance(c, str) and c.startswith("IPY_MODEL_")]
    if children: return [o for c in children for o in _widget_outputs(c, state, seen)]
    if name in ("HTMLModel", "HTMLMathModel") and st.get("value"):
        return [nbformat.v4.new_output("display_data", {"text/html": st["value"]})]
    if name in ("LabelModel",) and st.get("value"):
        return [nbformat.v4.new_output("display_data", {"text/plain": st["value"]})]
    if "Progress" in name: return []  # how far a load had gone when the notebook was saved: not worth a line
    labels = st.get("_options_labels")
    if labels is not None and "index" in st:  # a choice among options: its state holds the chosen index
        index = st["index"]
        chosen = [labels[i] for i in (index if isinstance(index, list) else [index]) if isinstance(i, int) and 0 <= i < len(labels)]
        value = ", ".join(map(str, chosen))
    elif "value" in st and not isinstance(st["value"], (dict, list)): value = st["value"]
    else: return []
    if value in ("", None): return []
    label = st.get("description") or name.replace("Model", "")
    html = f'<p class="widget-control"><span>{_esc(str(label))}</span> <code>{_esc(str(value))}</code></p>'
    return [nbformat.v4.new_output("display_data", {"text/html": html})]


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


WIDGET_NOTE = ('<p class="widget-note">An interactive widget, shown as it was saved: '
               'run the notebook in Jupyter to use it.</p>')


def replace_widgets(cell, state: dict):
    "Replace each widget view among the outputs of `cell` by the outputs its saved state holds."
    outputs = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if WIDGET_VIEW not in data: outputs.append(out); continue
        shown = _widget_outputs(data[WIDGET_VIEW].get("model_id", ""), state)
        if not shown and data.get("text/html"):  # no saved state, but the widget said how it reads without a kernel
            shown = [nbformat.v4.new_output("display_data", {"text/html": data["text/html"]})]
        if not shown and data.get("text/plain"): shown = [nbformat.v4.new_output("display_data", {"text/plain": data["text/plain"]})]
        outputs += shown + [nbformat.v4.new_output("display_data", {"text/html": WIDGET_NOTE})]
    cell["outputs"] = outputs


# ---------------------------------------------------------------------------------------------
# Outputs that would reach for the internet or run code on the page

_EXTERNAL = re.compile(r"""<script\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?//[^>]*>\s*</script>|"""
                       r"""<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?//[^>]*>""", re.I)


def clean_outputs(cell):
    "Drop JavaScript outputs and external scripts and styles from HTML outputs."
    for out in cell.get("outputs", []):
        data = out.get("data")
        if not data: continue
        data.pop("application/javascript", None)
        if "text/html" in data:
            html = "".join(data["text/html"]) if isinstance(data["text/html"], list) else data["text/html"]
            data["text/html"] = _EXTERNAL.sub("", html)
        if not data: out["data"] = {"text/plain": ""}


# ---------------------------------------------------------------------------------------------
# Notebooks

class NotebookError(Exception):
    "A notebook that cannot be published: which one, which cell and why."


def notebook_title(nb) -> tuple[str, str]:
    "The `# Title` and `> summary` of a notebook's first markdown cell."
    for cell in nb.cells:
        if cell.cell_type != "markdown": continue
        title = re.search(r"^#\s+(.+?)\s*$", cell.source, re.M)
        summary = re.search(r"^>\s*(.+?)\s*$", cell.source, re.M)
        return (title[1] if title else ""), (summary[1] if summary else "")
    return "", ""


def default_exp(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "code":
            directives, _ = split_directives(cell.source)
            if "default_exp" in directives and directives["default_exp"]: return directives["default_exp"][0]
    return ""


def _exported(nb, lib_name: str):
    "`(module, item)` for each item (`Entry` or constants) of the export cells of `nb`."
    module = f"{lib_name}.{default_exp(nb)}"
    for cell in nb.cells:
        if cell.cell_type != "code": continue
        directives, src = split_directives(_join(cell.source))
        if not directives.keys() & {"export", "exports"} or "hide" in directives: continue
        mod = f"{lib_name}.{directives['export'][0]}" if directives.get("export") else module
        try: items = cell_entries(src)
        except SyntaxError: continue
        for item in items: yield mod, item


def _entries(nb, lib_name: str) -> dict:
    "Name (and `Class.method`) -> `(entry, module, class entry or None)` for the export cells of `nb`."
    found = {}
    for mod, item in _exported(nb, lib_name):
        if isinstance(item, tuple): continue
        found.setdefault(item.name, (item, mod, None))
        for child in item.children: found.setdefault(f"{item.name}.{child.name}", (child, mod, item))
    return found


def api_index(notebooks: list, lib_name: str) -> dict:
    "Public name (and `Class.method`) -> `(full name, python-domain role, entry, module)` over all the notebooks."
    names = {}
    for nb in notebooks:
        for mod, item in _exported(nb, lib_name):
            if isinstance(item, tuple):
                for n in item[1]: names.setdefault(n, (f"{mod}.{n}", "py:data", None, mod))
                continue
            role = {"py:class": "py:class", "py:function": "py:func"}.get(item.directive, "py:obj")
            names.setdefault(item.name, (f"{mod}.{item.name}", role, item, mod))
            for child in item.children:
                names.setdefault(f"{item.name}.{child.name}", (f"{mod}.{item.name}.{child.name}", "py:obj", child, mod))
    return names


def make_linker(names: dict):
    "A function that links `name` in backticks (outside code blocks) to its API entry."
    pattern = re.compile(r"(?<![`\w\[])`([A-Za-z_][\w.]*)(\(\))?`(?![`\w]|\]\()")  # not inside a link's text

    def link_span(text):
        def sub(m):
            name = m[1]
            if name not in names: return m[0]
            full, role = names[name][:2]
            return f"{{{role}}}`{name}{m[2] or ''} <{full}>`"
        return pattern.sub(sub, text)

    def link(text: str) -> str:
        parts = re.split(r"(^```.*?^```[ \t]*$|^~~~.*?^~~~[ \t]*$)", text, flags=re.M | re.S)
        return "".join(p if i % 2 else link_span(p) for i, p in enumerate(parts))
    return link


def _join(source) -> str:
    return "".join(source) if isinstance(source, list) else source


_SHOW_DOC = re.compile(r"^show_doc\(\s*([\w.]+)\s*[,)]")


def show_doc_names(src: str):
    "The names a cell of only `show_doc(name)` calls shows (None for any other cell)."
    lines = [l.strip() for l in src.splitlines() if l.strip() and not l.strip().startswith("#")]
    if not lines or not all(_SHOW_DOC.match(l) for l in lines): return None
    return [_SHOW_DOC.match(l)[1] for l in lines]


def _show_doc_cells(names: list, local: dict, index: dict, link) -> list:
    "Markdown cells that show the entries of `names` where a `show_doc` cell asks for them (as nbdev does)."
    cells = []
    for name in names:
        if name in local:
            entry, mod, owner = local[name]
            if owner is not None:  # a method or property, shown on its own: named with its class
                entry = copy.copy(entry)
                entry.name = f"{owner.name}.{entry.name}"
            cells.append(nbformat.v4.new_markdown_cell(entry_markdown(entry, mod, link)))
        elif index.get(name) and index[name][2] is not None:  # documented in another chapter: shown again, not indexed
            cells.append(nbformat.v4.new_markdown_cell(entry_markdown(index[name][2], index[name][3], link, no_index=True)))
    return cells


def process(nb, lib_name: str, linker=None, name: str = "notebook", index: dict = None) -> nbformat.NotebookNode:
    """A copy of `nb` ready to be rendered: directives honoured, export cells replaced by API
    entries, widgets replaced by their saved views. Raises `NotebookError` for an error output.

    A name shown by an explicit `show_doc(name)` cell has its entry there instead of after its
    export cell; `index` (from `api_index`) finds the entries of names exported by other notebooks."""
    nb = copy.deepcopy(nb)
    link = linker or (lambda s: s)
    module = f"{lib_name}.{default_exp(nb)}"
    widget_state = (nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}) or {}).get("state", {})
    local, shown, documented = _entries(nb, lib_name), set(), set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            directives, src = split_directives(_join(cell.source))
            if "hide" not in directives and not _false(directives, "include"): shown.update(show_doc_names(src) or [])
    cells = []
    for number, cell in enumerate(nb.cells):
        cell.source = _join(cell.source)
        if cell.cell_type == "markdown":
            if cell.source.strip(): cell.source = link(cell.source); cells.append(cell)
            continue
        if cell.cell_type != "code": continue
        directives, src = split_directives(cell.source)
        if "hide" in directives or _false(directives, "include") or "default_exp" in directives or "exporti" in directives:
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and "raises-exception" not in cell.metadata.get("tags", []) \
                    and not _true(directives, "error"):
                raise NotebookError(f"{name}: cell {number} saved an error ({out.get('ename')}: {out.get('evalue')}):"
                                    f" the notebook must execute cleanly\n{src}")
        if "export" in directives or "exports" in directives:
            mod = f"{lib_name}.{directives['export'][0]}" if directives.get("export") else module
            try: items = cell_entries(src)
            except SyntaxError as e: raise NotebookError(f"{name}: cell {number} does not parse: {e}") from e
            if "exports" in directives: cells.append(nbformat.v4.new_code_cell(src))
            for item in items:
                if isinstance(item, tuple):
                    fresh = [n for n in item[1] if (mod, n) not in documented]
                    documented.update((mod, n) for n in fresh)
                    md = constants_markdown(fresh, item[2], mod, show_code="exports" not in directives)  # else shown above
                elif item.name in shown: continue  # its show_doc cell shows it
                else:
                    item.children = [c for c in item.children if f"{item.name}.{c.name}" not in shown]
                    md = entry_markdown(item, mod, link, no_index=(mod, item.name) in documented)  # redefined: one index entry
                    documented.add((mod, item.name))
                if md.strip(): cells.append(nbformat.v4.new_markdown_cell(md))
            continue
        names = show_doc_names(src)
        if names is not None:
            made = _show_doc_cells(names, local, index or {}, link)
            if made: cells += made; continue
            if not cell.get("outputs"): continue  # not found: nbdev's saved rendering, if there is one
            cell.metadata.setdefault("tags", []).append("remove-input")
        if "hide_line" in src: src = "\n".join(l for l in src.splitlines() if not re.search(r"#\s*\|\s*hide_line\s*$", l))
        if "filter_stream" in directives:
            words = directives["filter_stream"]
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream":
                    text = _join(out.get("text", ""))
                    out["text"] = "".join(l for l in text.splitlines(True) if not any(w in l for w in words))
        if _false(directives, "output"): cell.outputs = []
        replace_widgets(cell, widget_state)
        clean_outputs(cell)
        cell.source = src
        if _false(directives, "echo"):
            cell.metadata.setdefault("tags", []).append("remove-input")
            if not cell.get("outputs"): continue
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "tags"}
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    nb.metadata.setdefault("language_info", {"name": "python"})
    return nb


# ---------------------------------------------------------------------------------------------
# README

def _text(out) -> str:
    return _join(out.get("text", "")) if out.get("output_type") == "stream" else _join(out.get("data", {}).get("text/plain", ""))


def readme_markdown(nb, source: str = "nbs/index.ipynb") -> str:
    "GitHub markdown for the processed index notebook: prose, code and text or HTML outputs (no images)."
    parts = [f"<!-- Generated from {source} by tools/build_docs.py: edit the notebook, not this file. -->"]
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            parts.append(re.sub(r"\{py:\w+\}`([^`<]+?)(?: <[^`]+>)?`", r"`\1`", cell.source).strip()); continue
        if cell.cell_type != "code": continue
        if "remove-input" not in cell.metadata.get("tags", []) and cell.source.strip():
            parts.append(f"```python\n{cell.source.strip()}\n```")
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text/markdown" in data: parts.append(_join(data["text/markdown"]).strip())
            elif "text/html" in data and not any(k.startswith("image/") for k in data): parts.append(_join(data["text/html"]).strip())
            elif any(k.startswith("image/") for k in data): continue
            elif _text(out).strip(): parts.append(f"```\n{_text(out).rstrip()}\n```")
    return "\n\n".join(p for p in parts if p) + "\n"
