"""The notebooks in ``notebooks/``: stored with outputs from one clean run, and runnable.

``test_notebook_is_stored_executed`` checks what is committed: each notebook is stored with the
outputs of one top-to-bottom run by ``scripts/execute_notebooks.py`` (execution counts 1..n in
order, no error output, no oversized stream output, and the code unchanged since that run).

``test_notebook_runs`` executes each notebook again, in memory (the file is never written),
in a fresh Jupyter kernel started from *this* interpreter (a kernelspec written to a temporary
directory, so neither a system-wide ``python3`` kernel nor another venv is picked up), with
``PME_NOTEBOOK_FAST=1`` (small draws and particle counts), the repository root on
``PYTHONPATH`` and as the working directory. The notebooks assert their estimates against
exact values, so a notebook that computes nonsense fails here. The kernel setup and the
checks are shared with ``scripts/execute_notebooks.py``.

Marked ``notebooks`` so that CI can select or skip them (``-m notebooks`` /
``-m "not notebooks"``). Skipped with a message when ``nbclient``, ``nbformat`` or
``ipykernel`` are not installed (``pip install nbclient nbformat ipykernel``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXPECTED = (
    "bambi_formulas.ipynb",
    "bayes_factors.ipynb",
    "covariate_search.ipynb",
    "radon_evidence.ipynb",
    "tempering_steppers.ipynb",
)
CELL_TIMEOUT = int(os.environ.get("PME_NOTEBOOK_CELL_TIMEOUT", "900"))  # seconds per cell

pytestmark = pytest.mark.notebooks


def _load_runner():
    """``scripts/execute_notebooks.py`` as a module (scripts/ is not a package)."""
    path = REPO / "scripts" / "execute_notebooks.py"
    spec = importlib.util.spec_from_file_location("execute_notebooks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_expected_notebooks_exist():
    names = {path.name for path in runner.notebooks()}
    missing = sorted(set(EXPECTED) - names)
    assert not missing, f"missing notebooks: {missing}"


@pytest.mark.parametrize("path", runner.notebooks(), ids=lambda p: p.stem)
def test_notebook_is_stored_executed(path):
    """Valid nbformat v4, stored with the outputs of one clean top-to-bottom run."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "a notebook without code cells"
    first = code[0].source
    assert 'os.environ.get("PME_NOTEBOOK_FAST", "0") == "1"' in first, (
        "the first code cell must read PME_NOTEBOOK_FAST"
    )
    problems = runner.stored_problems(nb)
    assert not problems, (
        f"{path.name}: "
        + "; ".join(problems)
        + f"\nre-run it: .venv/bin/python scripts/execute_notebooks.py notebooks/{path.name}"
    )
    fast = nb.metadata[runner.METADATA_KEY]["executed_with"]["PME_NOTEBOOK_FAST"]
    expected = "1" if path.name in runner.FAST_NOTEBOOKS else "0"
    assert fast == expected, (
        f"{path.name} is stored from a PME_NOTEBOOK_FAST={fast} run; the script's default "
        f"(and notebooks/README.md) is PME_NOTEBOOK_FAST={expected}"
    )
    assert any(
        out.get("output_type") in ("display_data", "execute_result")
        for cell in code
        for out in cell.outputs
    ), "no rich outputs (tables, plots) stored"


def test_stored_check_rejects_bad_notebooks():
    """The check of the stored notebooks catches errors, reordered counts and edited code."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
    v4 = nbformat.v4
    nb = v4.new_notebook(
        cells=[
            v4.new_code_cell("x = 1", execution_count=1),
            v4.new_code_cell("print(x)", execution_count=2),
        ]
    )
    nb.cells[1].outputs = [v4.new_output("stream", name="stdout", text="1\n")]
    runner.clean_metadata(nb, fast=False)
    assert runner.stored_problems(nb) == []

    error = nbformat.from_dict(nb)
    error.cells[1].outputs = [v4.new_output("error", ename="NameError", evalue="x", traceback=[])]
    assert any("error output NameError" in p for p in runner.stored_problems(error))

    reordered = nbformat.from_dict(nb)
    reordered.cells[0].execution_count, reordered.cells[1].execution_count = 2, 1
    assert any("execution counts" in p for p in runner.stored_problems(reordered))

    unexecuted = nbformat.from_dict(nb)
    unexecuted.cells[1].execution_count = None
    assert any("execution counts" in p for p in runner.stored_problems(unexecuted))

    edited = nbformat.from_dict(nb)
    edited.cells[1].source = "print(x + 1)"
    assert any("stale" in p for p in runner.stored_problems(edited))


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory):
    """A kernelspec for this interpreter (PME_NOTEBOOK_FAST=1), on JUPYTER_PATH meanwhile."""
    pytest.importorskip("nbclient", reason="nbclient is not installed (pip install nbclient)")
    pytest.importorskip("nbformat", reason="nbformat is not installed (pip install nbformat)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install ipykernel)")
    root = tmp_path_factory.mktemp("jupyter")
    name = runner.write_kernelspec(root, {"PME_NOTEBOOK_FAST": "1"}, name="pme-notebook-test")
    with runner.jupyter_path(root):
        yield name


@pytest.mark.parametrize("path", runner.notebooks(), ids=lambda p: p.stem)
def test_notebook_runs(path, kernel_name, record_property):
    import nbformat
    from nbclient.exceptions import CellExecutionError

    before = _file_digest(path)
    nb = nbformat.read(path, as_version=4)
    # A last cell, added in memory only: which interpreter and settings did the kernel have?
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import os, sys\nprint(sys.executable)\nprint(os.environ.get('PME_NOTEBOOK_FAST'))"
        )
    )
    try:
        elapsed = runner.execute(nb, kernel_name, timeout=CELL_TIMEOUT)
    except CellExecutionError as err:
        pytest.fail(f"{path.name} failed:\n{err}\n{runner.failure_report(nb)}", pytrace=False)
    record_property("seconds", round(elapsed, 1))
    print(f"{path.name}: executed in {elapsed:.1f} s")
    probe = "".join(out.get("text", "") for out in nb.cells[-1].outputs).split()
    assert probe == [sys.executable, "1"], f"kernel interpreter / FAST flag: {probe}"
    assert _file_digest(path) == before, f"{path.name} was modified by its test run"
