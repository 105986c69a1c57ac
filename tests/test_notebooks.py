"""Execute the notebooks in ``notebooks/`` top to bottom on small settings.

Each notebook runs in a fresh Jupyter kernel started from *this* interpreter (a kernelspec
written to a temporary directory, so neither a system-wide ``python3`` kernel nor another venv
is picked up), with ``PME_NOTEBOOK_FAST=1`` (small draws and particle counts), the repository
root on ``PYTHONPATH`` and as the working directory. The notebooks assert their estimates
against exact values, so a notebook that computes nonsense fails here.

Marked ``notebooks`` so that CI can select or skip them (``-m notebooks`` /
``-m "not notebooks"``). Skipped with a message when ``nbclient``, ``nbformat`` or
``ipykernel`` are not installed (``pip install nbclient nbformat ipykernel``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
EXPECTED = (
    "bayes_factors.ipynb",
    "covariate_search.ipynb",
    "radon_evidence.ipynb",
    "tempering_steppers.ipynb",
)
CELL_TIMEOUT = int(os.environ.get("PME_NOTEBOOK_CELL_TIMEOUT", "900"))  # seconds per cell
KERNEL_NAME = "pme-notebook-test"

pytestmark = pytest.mark.notebooks


def _notebooks() -> list[Path]:
    return sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_expected_notebooks_exist():
    names = {path.name for path in _notebooks()}
    missing = sorted(set(EXPECTED) - names)
    assert not missing, f"missing notebooks: {missing}"


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_notebook_is_stored_clean(path):
    """Valid nbformat v4, stored without outputs or execution counts."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "a notebook without code cells"
    dirty = [i for i, cell in enumerate(code) if cell.outputs or cell.execution_count]
    assert not dirty, f"code cells {dirty} have stored outputs; clear them before committing"
    first = code[0].source
    assert 'os.environ.get("PME_NOTEBOOK_FAST", "0") == "1"' in first, (
        "the first code cell must read PME_NOTEBOOK_FAST"
    )


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """A kernelspec for this interpreter; JUPYTER_PATH points at it for the test's duration."""
    pytest.importorskip("nbclient", reason="nbclient is not installed (pip install nbclient)")
    pytest.importorskip("nbformat", reason="nbformat is not installed (pip install nbformat)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install ipykernel)")
    root = tmp_path_factory.mktemp("jupyter")
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    python_path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"pymc_evidence tests ({Path(sys.executable).parent.parent.name})",
        "language": "python",
        "env": {
            "PME_NOTEBOOK_FAST": "1",
            "PYTHONPATH": python_path,
        },
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(root), old) if p)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old


def _failure_report(nb) -> str:
    """The last error output of an executed notebook, for the assertion message."""
    for cell in reversed(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"{out['ename']}: {out['evalue']}\n" + "\n".join(out["traceback"][-5:])
    return ""


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_notebook_runs(path, kernel_env, record_property):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    # A last cell, added in memory only: which interpreter and settings did the kernel have?
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import os, sys\nprint(sys.executable)\nprint(os.environ.get('PME_NOTEBOOK_FAST'))"
        )
    )
    client = NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(REPO)}},  # the kernel's working directory
    )
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(f"{path.name} failed:\n{err}\n{_failure_report(nb)}", pytrace=False)
    elapsed = time.perf_counter() - start
    record_property("seconds", round(elapsed, 1))
    print(f"{path.name}: executed in {elapsed:.1f} s")
    probe = "".join(out.get("text", "") for out in nb.cells[-1].outputs).split()
    assert probe == [sys.executable, "1"], f"kernel interpreter / FAST flag: {probe}"
