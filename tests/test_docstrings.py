"""Docstrings say what code does and point to the docs for what was measured.

Three checks over the docstrings and ``#:`` comments of every module of the package:

- every ``:func:``, ``:mod:``, ``:class:``, ``:data:``, ``:meth:``, ``:attr:``, ``:exc:``
  target resolves by import (absolute, or relative to the module and its classes, as Sphinx
  resolves it);
- every reference to a docs section, ``:doc:`/page`, "Section title"``, names a heading of
  that page;
- no prose line quotes a seed number or a measured time: those figures live in ``docs/``,
  dated and with the command that made them (doctest lines are code and exempt).

And one over ``docs/call_flow.rst``, the map of a call onto the code: what it names exists.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pymc_evidence"
ROLE = re.compile(r":(?:func|mod|class|data|meth|attr|exc|obj|const):`([^`]+)`")
SECTION = re.compile(r':doc:`/?([\w/]+)`[,;]?\s*"([^"]+)"')
HEADING_LINE = re.compile(r"([=\-~^\"'`#*+])\1{2,}")
#: Optional dependencies a venv may lack (bambi needs PyMC 6): their names are not checked.
OPTIONAL = ("bambi", "nutpie", "numpyro", "blackjax", "dask", "distributed", "netCDF4")
FIGURE = re.compile(
    r"\bseeds?\s*[=:]?\s*\d|\b\d+(?:\.\d+)?\s*(?:s|ms|µs|min|sec|seconds|minutes)\b(?!\w)"
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _texts(source: str) -> list[tuple[int, str, list[str]]]:
    """``(line, text, enclosing classes)`` of every docstring, and the ``#`` comments as
    one text (with every class of the module as context)."""
    tree = ast.parse(source)
    out = []

    def visit(node, classes):
        for child in ast.iter_child_nodes(node):
            inner = classes
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = classes + [child.name] if isinstance(child, ast.ClassDef) else classes
                doc = ast.get_docstring(child, clean=False)
                if doc:
                    out.append((child.body[0].lineno, doc, inner))
            visit(child, inner)

    if ast.get_docstring(tree, clean=False):
        out.append((1, ast.get_docstring(tree, clean=False), []))
    visit(tree, [])
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = [tok.string.lstrip("#:") for tok in tokens if tok.type == tokenize.COMMENT]
    classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    out.append((0, "\n".join(comments), classes))
    return out


def _has_field(obj, name: str) -> bool:
    """An attribute declared but not set on the class: a dataclass field, an annotation,
    or one its methods assign to ``self``."""
    if name in (getattr(obj, "__annotations__", None) or {}):
        return True
    try:
        source = __import__("inspect").getsource(obj)
    except (TypeError, OSError):
        return False
    return re.search(rf"self\.{re.escape(name)}\b", source) is not None


def _lookup(dotted: str) -> bool:
    """Whether ``dotted`` is an importable module or an attribute path below one."""
    parts = dotted.split(".")
    if len(parts) == 1 and hasattr(builtins, dotted):
        return True
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for j, name in enumerate(parts[i:], start=i):
            if hasattr(obj, name):
                obj = getattr(obj, name)
            else:
                return j == len(parts) - 1 and isinstance(obj, type) and _has_field(obj, name)
        return True
    return False


def _resolves(target: str, module: str, classes: list[str]) -> bool:
    """Whether a role's target resolves from ``module`` (Sphinx's search order, roughly)."""
    if "<" in target and target.endswith(">"):
        target = target[target.index("<") + 1 : -1]
    name = target.strip().lstrip("~!.").removesuffix("()")
    top = name.split(".")[0]
    if top in OPTIONAL and importlib.util.find_spec(top) is None:
        return True
    package = module.rsplit(".", 1)[0]
    candidates = [name, f"{module}.{name}", f"{package}.{name}", f"pymc_evidence.{name}"]
    candidates += [f"{module}.{cls}.{name}" for cls in classes]
    return any(_lookup(candidate) for candidate in candidates)


def _headings(page: Path) -> set[str]:
    lines = page.read_text(encoding="utf-8").splitlines()
    return {
        " ".join(a.split())
        for a, b in zip(lines, lines[1:], strict=False)
        if a.strip() and HEADING_LINE.fullmatch(b.strip()) and len(b.strip()) >= len(a.strip())
    }


def test_docstring_references_resolve():
    unresolved = []
    for module, path in MODULES.items():
        for line, text, classes in _texts(path.read_text(encoding="utf-8")):
            flat = re.sub(r"\s*\n\s*", "", text)  # a target wrapped over two lines
            unresolved += [
                f"{path.relative_to(ROOT)}:{line}: {target}"
                for target in ROLE.findall(flat)
                if not _resolves(target, module, classes)
            ]
    assert not unresolved, "references to objects that do not exist:\n" + "\n".join(unresolved)


def test_docs_sections_named_in_docstrings_exist():
    pages = {page.stem: _headings(page) for page in (ROOT / "docs").glob("*.rst")}
    missing = []
    for path in MODULES.values():
        flat = re.sub(r"\s*\n\s*(?:#:?\s*)?", " ", path.read_text(encoding="utf-8"))
        for page, title in SECTION.findall(flat):
            if " ".join(title.split()) not in pages.get(page, ()):
                missing.append(f"{path.relative_to(ROOT)}: {page}: {title!r}")
    assert not missing, "docs sections that do not exist:\n" + "\n".join(missing)


def test_no_docstring_quotes_a_seed_or_a_measured_time():
    quoted = []
    for path in MODULES.values():
        source = path.read_text(encoding="utf-8")
        for start, text, _ in _texts(source):
            for offset, line in enumerate(text.splitlines()):
                prose = line.strip()
                if prose.startswith((">>>", "...")) or not FIGURE.search(prose):
                    continue
                quoted.append(f"{path.relative_to(ROOT)}:{start + offset}: {prose}")
    assert not quoted, "figures that belong in docs/:\n" + "\n".join(quoted)


def test_call_flow_page_names_existing_code():
    """``docs/call_flow.rst`` maps a call onto the code: every object it names resolves and
    every module file of its diagram exists (under ``pymc_evidence/`` or a subpackage)."""
    text = (ROOT / "docs" / "call_flow.rst").read_text(encoding="utf-8")
    flat = re.sub(r"\s*\n\s*", "", text)
    missing = [t for t in ROLE.findall(flat) if not _resolves(t, "pymc_evidence", [])]
    for name in set(re.findall(r"\b[a-z_]+(?:/[a-z_]+)?\.py\b", text)):
        if not (PACKAGE / name).exists() and not list(PACKAGE.glob(f"*/{name}")):
            missing.append(name)
    assert not missing, "docs/call_flow.rst names code that does not exist: " + str(missing)
