"""The notebooks as pages for Sphinx (MyST-NB), through nbdev's own processors, without Quarto.

`SphinxDefaults` is nbdev's `FilterDefaults` without the processors only Quarto reads, and with each
`show_doc` cell (nbdev's `add_show_docs` adds one after every export cell that has none) rendered by
nbdev's `show_doc` of the live object with `MystRenderer`: a directive of Sphinx's Python domain, so
each function, class, method and constant has an anchor (`modelrecord.tables.Tables.where`) and a
place in the search index, with its parameters' `fastcore.docments`. `SphinxLookup` is nbdev's
`NbdevLookup` over the package's `_modidx`, linking names in backticks to those entries. Here too is
what nbdev lacks: a widget's saved state as static outputs, nothing loaded from another host, a saved
error refused. Cells are not executed: a page shows the saved outputs.
"""
import ast, copy, functools, html, importlib, inspect, io, json, pydoc, re, textwrap, tokenize

import nbformat
from execnb.nbio import dict2nb, mk_cell, nb2dict
from fastcore.docments import ShowDocRenderer, docments
from nbdev.config import get_config
from nbdev.doclinks import NbdevLookup
from nbdev.process import Processor
from nbdev.processors import (FilterDefaults, FrontmatterProc, add_fold, add_links, clean_show_doc, exec_show_docs,
                              insert_warning)
from nbdev.showdoc import show_doc

_MEMBER = (property, functools.cached_property, classmethod, staticmethod)  # what a class shows besides its functions
WIDGET_VIEW, WIDGET_STATE = "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json"


class NotebookError(Exception):
    "A notebook that cannot be published: which one, which cell and why."


def _public(module: str) -> list:
    "`module.name` for each name in the module's `__all__`, and `module.Class.member` for its classes' public members."
    mod = importlib.import_module(module)
    return [f"{module}.{n}" for n in mod.__all__] + [
        f"{module}.{n}.{m}" for n in mod.__all__ if inspect.isclass(c := getattr(mod, n)) and c.__module__ == module
        for m, v in vars(c).items() if not m.startswith("_") and (inspect.isfunction(v) or isinstance(v, _MEMBER))]


class SphinxLookup(NbdevLookup):
    "nbdev's lookup of a name in backticks as a Sphinx link; on `module`'s page its names, members too, come first."
    def __init__(self, module: str = ""):
        lib, self.aliases, self.syms = get_config().lib_name, {}, {}
        for mod in sorted(importlib.import_module(f"{lib}._modidx").d["syms"], key=lambda m: m != module):
            for full in _public(mod):
                short = full[len(mod) + 1:]
                for key in (short, full[len(lib) + 1:], full) + ((short.split(".")[-1],) if mod == module else ()):
                    self.syms.setdefault(key, full)

    def _link_sym(self, m):
        full, before = self[m[1]], m.string[max(m.start() - 1, 0):m.start()]
        if full is None or before in ("[", "`", "}"): return m[0]  # a link's text, or a role already
        return f"{{py:obj}}`{m[1]}{'()' if m[0].endswith('()`') else ''} <{full}>`"

    def linkify(self, md): return super().linkify(md) if md else md


class _Text(str):
    __repr__ = str.__str__  # written as it is in a signature, without quotes


def _signature(sym, method: bool) -> str:
    "The live signature, annotations as a reader writes them: `list[Shard]`, not `list[modelrecord.reader.Shard]`."
    try: sig = inspect.signature(sym)
    except (TypeError, ValueError): return ""
    def short(a):
        if a is sig.empty: return a
        text = a if isinstance(a, str) else inspect.formatannotation(a)  # a str: a forward reference, shown unquoted
        return _Text(re.sub(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])", "", text))
    shown = lambda d: d if d is sig.empty else _Text(getattr(d, "__name__", None) or repr(d))  # a function by its name
    params = [p.replace(annotation=short(p.annotation), default=shown(p.default))
              for p in list(sig.parameters.values())[method and next(iter(sig.parameters), "") in ("self", "cls"):]]
    return str(sig.replace(parameters=params, return_annotation=short(sig.return_annotation)))


def class_fields(cls) -> list:
    "`(name, annotation, default, comment)` as written, for the annotated fields in the body of `cls` (a `Struct`'s)."
    try: src = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError): return []
    comments = {t.start[0]: t.string.lstrip("#").strip() for t in tokenize.generate_tokens(io.StringIO(src).readline)
                if t.type == tokenize.COMMENT}
    seg = lambda node: " ".join((ast.get_source_segment(src, node) or "").split()) if node else ""
    return [(n.target.id, seg(n.annotation), seg(n.value), comments.get(n.end_lineno, ""))
            for n in ast.parse(src).body[0].body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and not n.target.id.startswith("_")]


def _fence(text: str) -> str: return "`" * max([3] + [len(run) + 1 for run in re.findall(r"`{3,}", text)])
def _cell(text: str) -> str: return text.replace("|", "\\|").replace("\n", " ")


class MystRenderer(ShowDocRenderer):
    "A `show_doc` renderer writing a MyST directive of Sphinx's Python domain for the live object, its members inside."
    def __init__(self, sym, name=None, title_level=3, module="", owner=None, skip=(), index=True, link=str):
        self.raw = inspect.getattr_static(owner, name) if owner is not None else sym
        super().__init__(sym, name=name, title_level=title_level)
        self.module, self.owner, self.skip, self.index, self.link = module, owner, skip, index, link

    def _repr_markdown_(self):
        cls, raw, sym = inspect.isclass(self.sym), self.raw, self.sym
        kind = ("py:class" if cls else "py:property" if isinstance(raw, (property, functools.cached_property))
                else "py:method" if self.owner is not None or "." in self.nm else "py:function")
        opts = [f":module: {self.module}"] * (self.owner is None) + [":no-index:"] * (not self.index)
        opts += [":classmethod:"] * isinstance(raw, classmethod) + [":staticmethod:"] * isinstance(raw, staticmethod)
        init = not cls or "__init__" in vars(sym)  # a Struct's fields are its parameters: shown as a table instead
        sig = _signature(sym, kind == "py:method") if init and kind != "py:property" else ""
        body = [self.link(self.docs) if sym.__doc__ else ""]
        params = [f":param {k}: {self.link(v)}" for k, v in docments(sym).items() if v and k != "return"] * init
        body.append("\n".join(params))
        fields = class_fields(sym) if cls else []
        if fields:
            body.append("\n".join(["| field | type | default | |", "|---|---|---|---|"] + [
                "| " + " | ".join(_cell(x) for x in (f"`{n}`", f"`{a}`", f"`{d}`" if d else "", self.link(c))) + " |"
                for n, a, d, c in fields]))
        body += [MystRenderer(getattr(sym, m), m, owner=sym, index=self.index, link=self.link)._repr_markdown_()
                 for m, v in vars(sym).items() if cls and not m.startswith("_") and f"{self.nm}.{m}" not in self.skip
                 and (inspect.isfunction(v) or isinstance(v, _MEMBER))]
        text = "\n\n".join(b for b in body if b)
        return "\n".join([f"{_fence(text)}{{{kind}}} {self.nm}{sig}"] + opts + ["", text, _fence(text)])


def _show_doc_calls(cell) -> list:
    "The `show_doc(...)` calls of a cell that holds nothing else (None for any other cell)."
    trees = cell.parsed_() if cell.cell_type == "code" else None
    calls = [t.value for t in trees or [] if isinstance(t, ast.Expr) and isinstance(t.value, ast.Call)
             and getattr(t.value.func, "id", "") == "show_doc" and t.value.args]
    return calls if trees and len(calls) == len(trees) else None


def _module(nb) -> str:
    "The module the notebook exports to (`#| default_exp`), remembered before nbdev's `rm_export` drops that cell."
    if "module_" not in nb:
        found = (re.search(r"^\s*#\|\s*default_exp\s+(\S+)", c.source, re.M) for c in nb.cells if c.cell_type == "code")
        nb["module_"] = next((f"{get_config().lib_name}.{m[1]}" for m in found if m), "")
    return nb["module_"]


class render_show_docs(Processor):
    "Each `show_doc` cell as MyST entries of the live objects it names (nbdev would execute it), indexed on their page."
    def begin(self):
        self.module, self.indexed = _module(self.nb), set()
        self.lookup = SphinxLookup(self.module)
        self.ns = dict(vars(importlib.import_module(self.module))) if self.module else {}
        self.shown = {ast.unparse(c.args[0]) for cell in self.nb.cells for c in _show_doc_calls(cell) or []}

    def _resolve(self, text: str):
        try: return eval(text, self.ns)
        except (NameError, AttributeError):
            found = self.lookup[text] and pydoc.locate(self.lookup[text])
            if found is None: raise NotebookError(f"show_doc({text}): the package has no public {text}") from None
            return found

    def cell(self, cell):
        if (calls := _show_doc_calls(cell)) is None: return
        entries = []
        for text in (ast.unparse(call.args[0]) for call in calls):
            module = self._resolve(text.split(".")[0]).__module__
            renderer = functools.partial(MystRenderer, module=module, skip=self.shown, link=self.lookup.linkify,
                                         index=module == self.module and f"{module}.{text}" not in self.indexed)
            self.indexed.add(f"{module}.{text}")
            entries.append(show_doc(self._resolve(text), renderer=renderer, name=text)._repr_markdown_())
        cell.update(cell_type="markdown", source="\n\n".join(entries), metadata={})
        for key in ("outputs", "execution_count"): cell.pop(key, None)


class export_constants(Processor):
    "The public assignments of each export cell (which nbdev drops from the page), with a `py:data` anchor each."
    def begin(self):
        for cell in reversed([c for c in self.nb.cells if c.cell_type == "code" and "export" in c.directives_]):
            module, lines, anchors, code = _module(self.nb), cell.source.splitlines(), [], []
            if cell.directives_["export"]: module = f"{get_config().lib_name}.{cell.directives_['export'][0]}"
            for node in cell.parsed_() or []:
                targets = getattr(node, "targets", [getattr(node, "target", None)])
                targets = [t for n in targets for t in getattr(n, "elts", [n])]
                names = [t.id for t in targets if isinstance(t, ast.Name) and not t.id.startswith("_")]
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and names:
                    anchors += [f"```{{py:data}} {n}\n:module: {module}\n:no-typesetting:\n```" for n in names]
                    code += lines[node.lineno - 1:node.end_lineno]
            fence = _fence(cell.source)
            if code:
                source = "\n".join(anchors + [fence + "python"] + code + [fence])
                self.nb.cells.insert(cell.idx_ + 1, mk_cell(source, "markdown"))


class add_sphinx_links(Processor):
    "Names in backticks in the prose linked to their entries (nbdev's `add_links`, for Sphinx)."
    def begin(self): self.link = SphinxLookup(_module(self.nb)).linkify
    def cell(self, cell):
        if cell.cell_type == "markdown" and not cell.source.startswith("```{py:"): cell.source = self.link(cell.source)


def _widget_outputs(model_id: str, state: dict, seen: set) -> list:
    "The static outputs that stand for the widget `model_id` (and its children) in the saved state."
    if model_id in seen or model_id not in state: return []
    seen.add(model_id)
    name, st = state[model_id].get("model_name", ""), state[model_id].get("state", {})
    if name == "OutputModel": return copy.deepcopy(st.get("outputs", []))
    children = [c[len("IPY_MODEL_"):] for c in st.get("children", []) if str(c).startswith("IPY_MODEL_")]
    if children: return [o for c in children for o in _widget_outputs(c, state, seen)]
    if name in ("HTMLModel", "HTMLMathModel") and st.get("value"): return [_html(st["value"])]
    labels, index, value = st.get("_options_labels"), st.get("index"), st.get("value")
    if labels is not None and index is not None:  # a choice among options: its state holds the chosen index
        chosen = index if isinstance(index, list) else [index]
        value = ", ".join(str(labels[i]) for i in chosen if 0 <= i < len(labels))
    if value in ("", None) or "Progress" in name or isinstance(value, (dict, list)): return []
    label = html.escape(str(st.get("description") or name.replace("Model", "")))
    return [_html(f'<p class="widget-control"><span>{label}</span> <code>{html.escape(str(value))}</code></p>')]


def _html(text: str): return nbformat.v4.new_output("display_data", {"text/html": text})


WIDGET_NOTE = ('<p class="widget-note">An interactive widget, shown as it was saved: '
               'run the notebook in Jupyter to use it.</p>')
_EXTERNAL = re.compile(r"""<script\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?//[^>]*>\s*</script>|"""
                       r"""<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?//[^>]*>""", re.I)


class static_outputs(Processor):
    "A saved error refused; a widget view as its saved state shows it; JavaScript and other hosts' scripts dropped."
    def begin(self): self.state = ((self.nb.metadata.get("widgets") or {}).get(WIDGET_STATE) or {}).get("state", {})
    def end(self): self.nb.metadata.pop("widgets", None)

    def cell(self, cell):
        outputs = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if out.get("output_type") == "error" and "raises-exception" not in cell.metadata.get("tags", []):
                raise NotebookError(f"cell {cell.idx_} saved an error ({out.get('ename')}: {out.get('evalue')}): "
                                    f"the notebook must execute cleanly\n{cell.source}")
            if WIDGET_VIEW in data:
                shown = _widget_outputs(data[WIDGET_VIEW].get("model_id", ""), self.state, set())
                # no saved state, but the widget said how it reads without a kernel
                if not shown and data.get("text/html"):
                    shown = [_html(_EXTERNAL.sub("", "".join(data["text/html"])))]
                text = "" if shown else "".join(data.get("text/plain", ""))
                outputs += shown + [nbformat.v4.new_output("display_data", {"text/plain": text})] * bool(text)
                outputs.append(_html(WIDGET_NOTE)); continue
            data.pop("application/javascript", None)
            if "text/html" in data: data["text/html"] = _EXTERNAL.sub("", "".join(data["text/html"]))
            outputs.append(out)
        if "outputs" in cell: cell["outputs"] = outputs


class SphinxDefaults(FilterDefaults):
    "nbdev's processors for the docs, less Quarto's, with `show_doc` rendered for Sphinx instead of executed."
    quarto_only = (FrontmatterProc, insert_warning, clean_show_doc, add_links, add_fold)

    def base_procs(self):
        procs = [p for p in super().base_procs() if p not in self.quarto_only]
        at = procs.index(exec_show_docs)
        procs[at:at + 1] = [export_constants, render_show_docs]
        return [static_outputs] + procs + [add_sphinx_links]


def process(nb, name: str = "notebook") -> nbformat.NotebookNode:
    "A copy of the `nbformat` notebook `nb` ready for MyST-NB, made by `SphinxDefaults` (or `NotebookError`)."
    processed = dict2nb(copy.deepcopy(dict(nb)))
    try: SphinxDefaults()(processed)
    except NotebookError as e: raise NotebookError(f"{name}: {e}") from None
    keep = ("id", "cell_type", "source", "metadata", "outputs", "execution_count")
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}}
    cells = [{k: v for k, v in c.items() if k in keep} for c in nb2dict(processed)["cells"]]
    return nbformat.reads(json.dumps({**nb2dict(processed), "cells": cells, "metadata": meta}), as_version=4)
