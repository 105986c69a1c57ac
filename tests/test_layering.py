"""The package's architecture, enforced by reading its source with ``ast`` (nothing imported).

Imports flow downwards only: a module may import from its own layer or lower layers. Every
import statement counts, absolute or relative, at module level or inside a function, and so
does ``importlib.import_module("pymc_evidence...")`` with a literal name. The top-level
``pymc_evidence/__init__.py`` may import anything; no other module may import it.

Also: modules of at most 400 lines, function bodies (docstring excluded) of at most 60.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "pymc_evidence"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

# Layer of each first-level name under pymc_evidence/ (a module foo.py or a package foo/).
LAYERS = {
    "record": 0,
    "estimators": 1,
    "compat": 2,
    "hygiene": 2,
    "datasets": 2,
    "testing": 2,
    "progress": 2,
    # the model runtime (space, compiled functions, backend) below the base densities, and
    # the densities below their fit: a density never fits, the runtime knows no density
    "runtime": 3,
    "base": 4,
    "basefit": 5,
    "transforms": 6,
    "steps": 7,
    "engines": 7,
    "results": 8,
    "problem": 9,
    "nuts": 9,
    "methods": 10,
    "api": 11,
    "compare": 12,
    "compare_table": 12,
    "compare_methods": 12,
    "many": 12,
    "plots": 12,
}
# Neither may import the other (same layer), or the first may not import the second though it
# sits above it: the results are the schema of the ``log_evidence`` group, so they compute
# nothing (the estimate record and the warnings they need are ``record``'s, below both).
FORBIDDEN_PAIRS = {
    ("steps", "engines"),
    ("engines", "steps"),
    ("results", "estimators"),
    ("results", "steps"),
    ("results", "engines"),
}
# Third-party packages the pure numerical layers must not touch.
NOT_IN_ESTIMATORS = {"pymc", "pytensor", "xarray", "arviz"}
PURE = ("record", "estimators")

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
#: The engines take their fixed configuration as frozen values (engines/settings.py)
MAX_ENGINE_PARAMETERS = 8


def _modules():
    return sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path):
    return path.relative_to(ROOT).as_posix()


def _module_name(path, root=ROOT):
    parts = (PACKAGE, *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(dotted, root=ROOT):
    """Whether ``pymc_evidence.a.b`` is a module or package in the source tree."""
    rel = Path(*dotted.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def _imports(path, root=ROOT):
    """(line, dotted name) of everything ``path`` imports, relative imports resolved."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                source = ".".join(parts + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = f"{source}.{alias.name}"
                target = sub if source.startswith(PACKAGE) and _exists(sub, root) else source
                found.append((node.lineno, target))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def _unit(dotted):
    """First-level name under the package (``None`` for the package itself)."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else None


MODULES = _modules()
IDS = [_rel(p) for p in MODULES]


def test_package_found():
    assert (ROOT / "__init__.py").is_file() and len(MODULES) > 10


def _violations(path, root=ROOT):
    """Every import of ``path`` that breaks the layering, as readable lines."""
    if path == root / "__init__.py":
        return []  # the public surface may import anything
    own = _unit(_module_name(path, root))
    if own not in LAYERS:
        return [f"'{own}' has no layer; add it to LAYERS"]
    bad = []
    for line, target in sorted(_imports(path, root)):
        top = target.split(".")[0]
        if own in PURE and top in NOT_IN_ESTIMATORS:
            bad.append(f"line {line}: imports {target} ({own} is pure numpy/scipy)")
        if top != PACKAGE:
            continue
        other = _unit(target)
        if other is None:
            bad.append(f"line {line}: imports the top-level package {PACKAGE}")
        elif other not in LAYERS:
            bad.append(f"line {line}: imports {target}, which has no layer")
        elif LAYERS[other] > LAYERS[own]:
            bad.append(
                f"line {line}: {own} (layer {LAYERS[own]}) imports {target} (layer {LAYERS[other]})"
            )
        elif (own, other) in FORBIDDEN_PAIRS:
            bad.append(f"line {line}: {own} must not import {other} ({target})")
    return bad


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_imports_flow_downwards(path):
    bad = _violations(path)
    assert not bad, f"{_rel(path)}:\n  " + "\n  ".join(bad)


def test_checker_resolves_relative_and_local_imports(tmp_path):
    """The parser itself: relative imports resolved, imports inside functions found."""
    root = tmp_path / PACKAGE
    (root / "steps").mkdir(parents=True)
    for name in ("__init__.py", "steps/__init__.py", "steps/a.py", "engines.py"):
        (root / name).write_text("")
    (root / "steps" / "a.py").write_text(
        "import numpy\n"
        "from . import b\n"
        "from .. import engines\n"
        "from ..steps.c import f\n"
        "def g():\n"
        "    from pymc_evidence import api\n"
        "    import importlib\n"
        "    return importlib.import_module('pymc_evidence.plots')\n"
    )
    found = [t for _, t in sorted(_imports(root / "steps" / "a.py", root))]
    assert found == [
        "numpy",
        "pymc_evidence.steps",  # b does not exist: the package it came from
        "pymc_evidence.engines",  # an existing submodule: the submodule
        "pymc_evidence.steps.c",
        "pymc_evidence",  # api does not exist in the fake tree
        "importlib",
        "pymc_evidence.plots",
    ]
    bad = _violations(root / "steps" / "a.py", root)
    assert len(bad) == 3, bad
    assert "steps must not import engines" in bad[0]
    assert "top-level package" in bad[1]
    assert f"layer {LAYERS['plots']}" in bad[2]
    (root / "estimators.py").write_text("def f():\n    import pytensor.tensor as pt\n")
    assert "pure numpy" in _violations(root / "estimators.py", root)[0]
    (root / "record.py").write_text("import xarray\n")
    assert "pure numpy" in _violations(root / "record.py", root)[0]
    (root / "newthing.py").write_text("")
    assert "no layer" in _violations(root / "newthing.py", root)[0]


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_module_size(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_MODULE_LINES, f"{_rel(path)} has {n} lines (> {MAX_MODULE_LINES})"


def _body_lines(node):
    body = node.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_function_length(path):
    long = [
        f"{node.name} (line {node.lineno}): {n} lines"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (n := _body_lines(node)) > MAX_FUNCTION_LINES
    ]
    assert not long, f"{_rel(path)}: function bodies over {MAX_FUNCTION_LINES} lines: {long}"


def _n_parameters(node) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return len(names) - (1 if names[:1] in (["self"], ["cls"]) else 0)


ENGINES = [p for p in MODULES if p.parent.name == "engines"]


@pytest.mark.parametrize("path", ENGINES, ids=[_rel(p) for p in ENGINES])
def test_engine_functions_take_few_parameters(path):
    wide = [
        f"{node.name} (line {node.lineno}): {n}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and (n := _n_parameters(node)) > MAX_ENGINE_PARAMETERS
    ]
    assert not wide, f"{_rel(path)}: more than {MAX_ENGINE_PARAMETERS} parameters: {wide}"


def test_parameter_count_sees_every_kind():
    tree = ast.parse("def f(a, /, b, *args, c, **kw): pass\nclass K:\n    def g(self, x): pass")
    counts = [_n_parameters(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert counts == [3, 1]


def _private_imports(source: str) -> list[str]:
    """``module.name`` of every private name (``_name``) imported from this package."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        ours = node.level > 0 or (node.module or "").split(".")[0] == PACKAGE
        out += [
            f"{'.' * node.level}{node.module or ''}.{alias.name}"
            for alias in node.names
            if ours and alias.name.startswith("_") and not alias.name.startswith("__")
        ]
    return out


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_no_private_names_imported_across_modules(path):
    """A name another module needs is public in the module that defines it."""
    found = _private_imports(path.read_text())
    assert not found, f"{_rel(path)} imports private names: {found}"
    assert _private_imports("from .x import _a, b\nfrom pymc_evidence.y import _c\n") == [
        ".x._a",
        "pymc_evidence.y._c",
    ]
    assert not _private_imports("from pytensor.graph.replace import _vectorize_node\n")


def _module_stores(source: str) -> list[str]:
    """Names bound at module level to a ``WeakKeyDictionary`` or a ``ContextVar``."""
    found = []
    for node in ast.parse(source).body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Call):
            func = value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("WeakKeyDictionary", "ContextVar"):
                found.append(ast.unparse(node).split("=")[0].split(":")[0].strip())
    return found


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_compiled_functions_live_on_the_models_runtime(path):
    """No module keeps a store of its own (compiled functions, prepared models, settings):
    they live on the model's runtime (:mod:`pymc_evidence.runtime.runtime`)."""
    stores = _module_stores(path.read_text())
    assert not stores, f"{_rel(path)}: module-level stores {stores}; use ModelRuntime.compiled"


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_no_module_globals_are_rebound(path):
    """No function rebinds a module global (a job or a setting carried between calls)."""
    found = [
        f"line {node.lineno}: global {', '.join(node.names)}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
    ]
    assert not found, f"{_rel(path)}: {found}"


def test_module_store_finder_sees_both_kinds():
    source = "import weakref\n_A: dict = weakref.WeakKeyDictionary()\n_B = ContextVar('b')\n"
    assert _module_stores(source) == ["_A", "_B"]


def test_results_import_no_estimator_step_or_engine(tmp_path):
    """The results are the schema: an import of an estimator, a step or an engine from
    ``results/`` is refused, though each sits below it; the record and ``compat`` are not."""
    root = tmp_path / PACKAGE
    (root / "results").mkdir(parents=True)
    (root / "estimators").mkdir()
    for name in ("__init__.py", "results/__init__.py", "estimators/__init__.py"):
        (root / name).write_text("")
    for name in ("estimators/ct.py", "steps.py", "engines.py", "record.py", "compat.py"):
        (root / name).write_text("")
    (root / "results" / "a.py").write_text(
        "from ..record import EvidenceEstimate\n"
        "from ..compat import get_group\n"
        "from ..estimators.ct import ct_log_evidence\n"
        "def f():\n"
        "    from pymc_evidence import steps, engines\n"
    )
    bad = _violations(root / "results" / "a.py", root)
    assert len(bad) == 3, bad
    assert "results must not import estimators (pymc_evidence.estimators.ct)" in bad[0]
    assert "results must not import engines" in bad[1]  # same line: sorted by name
    assert "results must not import steps" in bad[2]


def test_runtime_below_densities_below_their_fit(tmp_path):
    """The model runtime knows no base density, and a density never fits: an import of
    ``base/`` from ``runtime/``, or of ``basefit/`` from ``base/``, is refused; the other way
    round is the direction of the layers."""
    root = tmp_path / PACKAGE
    for name in ("runtime", "base", "basefit"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text("")
    for name in ("runtime/space.py", "base/gaussian.py", "basefit/fit.py"):
        (root / name).write_text("")
    (root / "runtime" / "a.py").write_text("from ..base.gaussian import GaussianBase\n")
    (root / "base" / "a.py").write_text(
        "from ..runtime.space import ModelSpace\ndef f():\n    from ..basefit.fit import fit_base\n"
    )
    (root / "basefit" / "a.py").write_text(
        "from ..base.gaussian import GaussianBase\nfrom ..runtime.space import ModelSpace\n"
    )
    bad = _violations(root / "runtime" / "a.py", root)
    assert len(bad) == 1 and "runtime (layer 3) imports pymc_evidence.base.gaussian" in bad[0]
    bad = _violations(root / "base" / "a.py", root)
    assert len(bad) == 1 and "base (layer 4) imports pymc_evidence.basefit.fit" in bad[0]
    assert not _violations(root / "basefit" / "a.py", root)
