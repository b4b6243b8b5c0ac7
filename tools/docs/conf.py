"""Sphinx configuration of the documentation site; `tools/build_docs.py` runs Sphinx with it.

The pages are the processed notebooks (see `tools/nbdocs.py`), rendered by MyST-NB from their saved
outputs: nothing is executed. The site loads nothing from the internet: the Furo theme uses the
system's fonts, search runs on an index shipped with the site, and the widget and MathJax scripts
that MyST-NB and Sphinx would fetch from a CDN are switched off.
"""
import os

project = os.environ.get("DOCS_PROJECT", "modelrecord")
author = os.environ.get("DOCS_AUTHOR", "")
copyright = os.environ.get("DOCS_COPYRIGHT", "")
root_doc = "index"

extensions = ["myst_nb"]
nb_execution_mode = "off"                    # saved outputs only: the notebooks are executed by their authors
nb_ipywidgets_js = {}                        # no require.js or widget manager from a CDN (widgets are replaced)
nb_merge_streams = True
nb_render_markdown_format = "myst"           # text/markdown outputs may hold API entries and links
myst_heading_anchors = 3                     # [text](reader.ipynb#salvage) links to a heading, and is checked
myst_enable_extensions = ["colon_fence", "fieldlist"]   # fieldlist: the `:param x:` lines of an API entry
# MathJax is loaded only by a page with math, from a CDN: check_site refuses such a page (no math here).
# An annotation naming a class that two other modules define is left unlinked, not an error.
suppress_warnings = ["mystnb.unknown_mime_type", "ref.python"]

html_theme = "furo"
html_title = project
html_static_path = [os.path.join(os.path.dirname(__file__), "_static")]
html_css_files = ["site.css"]
html_favicon = os.path.join(os.path.dirname(__file__), "_static", "favicon.svg")  # else the browser asks for /favicon.ico
html_copy_source = False                     # the notebooks are in the repository, not on the site
html_show_sourcelink = False
html_show_sphinx = False
html_permalinks_icon = "#"
html_theme_options = {"navigation_with_keys": True, "top_of_page_buttons": []}
python_maximum_signature_line_length = 88    # longer signatures are written one parameter a line
python_display_short_literal_types = True
add_module_names = False                     # `read_shards`, not `modelrecord.reader.read_shards`
toc_object_entries_show_parents = "hide"
pygments_style = "friendly"
pygments_dark_style = "monokai"
