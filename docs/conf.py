"""Sphinx configuration for the pymc_evidence documentation.

Build with ``make docs`` (warnings are errors). The API reference is generated from the
docstrings: the module list lives in ``api/index.rst`` (one line per module). The example
notebooks (``notebooks/*.ipynb``, linked from ``notebooks/`` here) are rendered by myst-nb with
the outputs stored in them (``scripts/execute_notebooks.py`` writes those); nothing here runs a
sampler or a notebook, so the build takes seconds.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)

from sphinx.ext import autosummary  # noqa: E402

import pymc_evidence  # noqa: E402

project = "pymc_evidence"
author = "the pymc_evidence developers"
copyright = "2026, the pymc_evidence developers"  # noqa: A001
version = release = pymc_evidence.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "code"  # `x` in the pages renders as inline code
pygments_style = "sphinx"

# -- autodoc / autosummary / numpydoc -------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False  # a module's __all__ decides what is documented
autodoc_default_options = {"show-inheritance": True}
autodoc_member_order = "groupwise"
autodoc_typehints = "none"  # the numpydoc sections already give the types
numpydoc_show_class_members = False  # avoids stub tables for every dataclass field
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def _api_modules() -> list[str]:
    """The module names listed in the autosummary directive of ``api/index.rst``."""
    path = os.path.join(os.path.dirname(__file__), "api", "index.rst")
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(".. autosummary::"))
    names = []
    for line in lines[start + 1 :]:
        if line and not line.startswith(" "):
            break  # the directive's body ended
        item = line.strip()
        if item and not item.startswith(":"):
            names.append(item)
    return names


def _public_members(modules: list[str]) -> dict[str, dict[str, list[str]]]:
    """Per module, the names of its ``__all__`` sorted into functions, classes and data.

    A name that is the very object exported at the top level (``pymc_evidence.X``) is put in
    ``"reexported"`` instead: it is documented once, on the ``pymc_evidence`` page, and the
    module's page links there (one target per object, no duplicate descriptions).
    """
    top = {name: getattr(pymc_evidence, name) for name in pymc_evidence.__all__}
    out = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        groups = {"functions": [], "classes": [], "data": [], "reexported": []}
        # ``pymc_evidence.compare`` is both a module and the function exported at top level:
        # the module page then gets no index entry of its own (one target per name).
        short = module_name.rsplit(".", 1)[-1]
        groups["shadowed"] = module is not pymc_evidence and getattr(
            pymc_evidence, short, module
        ) is not module
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if name.startswith("__") or inspect.ismodule(obj):
                continue
            if module is not pymc_evidence and name in top and obj is top[name]:
                groups["reexported"].append(name)
            elif inspect.isclass(obj):
                groups["classes"].append(name)
            elif callable(obj):
                groups["functions"].append(name)
            else:
                groups["data"].append(name)
        out[module_name] = groups
    return out


# The module template (_templates/autosummary/pme_module.rst) reads this.
autosummary_context = {"api": _public_members(_api_modules())}


def _summary_outside_literals(extract):
    """Wrap autosummary's first-sentence extraction so it never cuts an inline literal.

    It splits at the first ". ", which may fall inside ``beta_min .. 1``; the cut summary is
    then invalid reST (a docutils warning). In that case use the whole first paragraph.
    """

    def extract_summary(doc: list[str], document) -> str:
        summary = extract(doc, document)
        if summary.count("``") % 2 == 0:
            return summary
        lines = []
        for line in doc:
            if not line.strip():
                if lines:
                    break
                continue
            lines.append(line.strip())
        return " ".join(lines)

    return extract_summary


autosummary.extract_summary = _summary_outside_literals(autosummary.extract_summary)


# -- notebooks (myst-nb) ----------------------------------------------------------------------
# docs/notebooks/*.ipynb are symbolic links to the repository's notebooks/. They are stored
# with their outputs (tests/test_notebooks.py checks that the outputs are those of one clean
# top-to-bottom run): show those, never execute at build time.
nb_execution_mode = "off"
nb_merge_streams = True  # one block per cell for stdout, not one per print call
myst_enable_extensions = ["dollarmath", "amsmath"]  # $...$ and $$...$$ in the markdown cells
myst_heading_anchors = 3


# -- HTML ------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"pymc_evidence {release}"
html_static_path = []
html_theme_options = {
    "description": "Marginal likelihoods with honest error bars for PyMC models",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
