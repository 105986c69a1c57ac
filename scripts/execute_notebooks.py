"""Execute the notebooks in ``notebooks/`` top to bottom and store them with their outputs.

Usage (from the repository root)::

    .venv/bin/python scripts/execute_notebooks.py                 # every notebook, in place
    .venv/bin/python scripts/execute_notebooks.py notebooks/bayes_factors.ipynb
    .venv/bin/python scripts/execute_notebooks.py --check         # only check what is stored

Each notebook runs in a fresh Jupyter kernel started from *this* interpreter (a kernelspec
written to a temporary directory, so neither a system-wide ``python3`` kernel nor another venv
is picked up), with the repository root on ``PYTHONPATH`` and as the working directory. The
settings are the full ones a reader sees (``PME_NOTEBOOK_FAST=0``), except for the notebooks
in ``FAST_NOTEBOOKS``, whose full run takes too long to repeat for every change (see
``notebooks/README.md``); ``--fast`` / ``--full`` override that for every notebook given.

The executed notebook is written back with volatile metadata removed (execution timestamps,
widget state, the temporary kernel's name), so that a re-run changes only what was computed.
Its metadata records the settings it ran with and a hash of its code cells; ``--check`` and
``tests/test_notebooks.py`` use :func:`stored_problems` to reject a notebook with an error
output, execution counts other than 1..n in order, or code edited after the run.

``tests/test_notebooks.py`` imports :func:`write_kernelspec` and :func:`execute` from here
(one kernel setup for the tests and for this script).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
KERNEL_NAME = "pme-notebook"
# Notebooks stored from a PME_NOTEBOOK_FAST=1 run (their full run takes too long). None at
# present: the longest full run, radon_evidence, takes 5-7 min on 2 shared cores.
FAST_NOTEBOOKS: frozenset[str] = frozenset()
# Where the run's settings and code hash are kept in the notebook metadata.
METADATA_KEY = "pymc_evidence"
# The kernelspec stored in the notebooks: the generic one a reader's Jupyter has.
STORED_KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
# Cell metadata written by nbclient/Jupyter that changes on every run.
VOLATILE_CELL_METADATA = ("execution", "ExecuteTime", "collapsed", "scrolled")
# A stream output larger than this (characters) is reported: probably a progress bar.
MAX_STREAM_CHARS = 20_000


def notebooks() -> list[Path]:
    """The notebooks of ``notebooks/``, sorted by name.

    Returns
    -------
    list of pathlib.Path
    """
    return sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def write_kernelspec(root: Path, env: dict[str, str], name: str = KERNEL_NAME) -> str:
    """Write a kernelspec for this interpreter under ``root/kernels/name``.

    Parameters
    ----------
    root : pathlib.Path
        A directory to add to ``JUPYTER_PATH`` (see :func:`jupyter_path`).
    env : dict of str to str
        Environment variables of the kernel, e.g. ``{"PME_NOTEBOOK_FAST": "1"}``. The
        repository root is prepended to ``PYTHONPATH``.
    name : str, optional
        The kernel name.

    Returns
    -------
    str
        The kernel name, for ``nbclient.NotebookClient(kernel_name=...)``.
    """
    spec_dir = Path(root) / "kernels" / name
    spec_dir.mkdir(parents=True, exist_ok=True)
    python_path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"pymc_evidence ({Path(sys.executable).parent.parent.name})",
        "language": "python",
        "env": {**env, "PYTHONPATH": python_path},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return name


@contextlib.contextmanager
def jupyter_path(root: Path) -> Iterator[None]:
    """Put ``root`` first on ``JUPYTER_PATH`` for the duration of the block.

    Parameters
    ----------
    root : pathlib.Path
        The directory given to :func:`write_kernelspec`.

    Yields
    ------
    None
    """
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(root), old) if p)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old


def execute(nb, kernel_name: str, timeout: int | None = None, verbose: bool = False) -> float:
    """Execute a notebook in memory, top to bottom, in the repository root.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The notebook; its cells get the new outputs and execution counts.
    kernel_name : str
        A kernel from :func:`write_kernelspec` (its directory on ``JUPYTER_PATH``).
    timeout : int or None, optional
        Seconds per cell; None waits as long as a cell takes.
    verbose : bool, optional
        Print each code cell's number and time when it finishes.

    Returns
    -------
    float
        Wall-clock seconds.

    Raises
    ------
    nbclient.exceptions.CellExecutionError
        When a cell raises; ``nb`` then holds the outputs up to and including that cell.
    """
    from nbclient import NotebookClient

    start = time.perf_counter()
    last = [start]

    def report(cell, cell_index, **_):
        now = time.perf_counter()
        if cell.cell_type == "code":
            print(f"  cell {cell_index}: {now - last[0]:.0f} s", flush=True)
        last[0] = now

    client = NotebookClient(
        nb,
        kernel_name=kernel_name,
        timeout=timeout,
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(REPO)}},  # the kernel's working directory
        on_cell_executed=report if verbose else None,
    )
    client.execute()
    return time.perf_counter() - start


def failure_report(nb) -> str:
    """The last error output of an executed notebook.

    Parameters
    ----------
    nb : nbformat.NotebookNode

    Returns
    -------
    str
        ``"ename: evalue"`` and the end of the traceback, or ``""`` without an error.
    """
    for cell in reversed(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"{out['ename']}: {out['evalue']}\n" + "\n".join(out["traceback"][-5:])
    return ""


def code_hash(nb) -> str:
    """SHA-256 of the sources of the code cells, in order.

    Parameters
    ----------
    nb : nbformat.NotebookNode

    Returns
    -------
    str
    """
    digest = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode("utf-8") + b"\0")
    return digest.hexdigest()


def clean_metadata(nb, fast: bool) -> None:
    """Remove what changes on every run and record the run's settings and code hash.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        An executed notebook, changed in place.
    fast : bool
        Whether it ran with ``PME_NOTEBOOK_FAST=1``.
    """
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = dict(STORED_KERNELSPEC)
    info = nb.metadata.get("language_info", {})
    nb.metadata["language_info"] = {k: v for k, v in info.items() if k != "version"}
    nb.metadata[METADATA_KEY] = {
        "executed_with": {"PME_NOTEBOOK_FAST": "1" if fast else "0"},
        "code_sha256": code_hash(nb),
    }
    for cell in nb.cells:
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)


def stored_problems(nb) -> list[str]:
    """Why a stored notebook is not the record of one clean top-to-bottom run.

    Parameters
    ----------
    nb : nbformat.NotebookNode

    Returns
    -------
    list of str
        Empty when every code cell ran once, in order (execution counts 1..n), none raised,
        no stream output is oversized, and the code is what ran (the hash that
        :func:`clean_metadata` recorded).
    """
    problems = []
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    if counts != list(range(1, len(code) + 1)):
        problems.append(f"execution counts {counts}, expected 1..{len(code)} in order")
    for i, cell in enumerate(code):
        for out in cell.outputs:
            kind = out.get("output_type")
            if kind == "error":
                problems.append(f"code cell {i}: error output {out.get('ename')}")
            elif kind == "stream" and len(out.get("text", "")) > MAX_STREAM_CHARS:
                problems.append(f"code cell {i}: {len(out['text'])} characters of {out['name']}")
    recorded = nb.metadata.get(METADATA_KEY, {})
    if recorded.get("code_sha256") != code_hash(nb):
        problems.append(
            "code changed since the stored run (or it was not run by "
            "scripts/execute_notebooks.py): outputs may be stale"
        )
    return problems


def run_notebook(path: Path, fast: bool, timeout: int | None) -> float:
    """Execute ``path`` in a fresh kernel and write it back with its outputs.

    Parameters
    ----------
    path : pathlib.Path
    fast : bool
        Run with ``PME_NOTEBOOK_FAST=1``.
    timeout : int or None
        Seconds per cell.

    Returns
    -------
    float
        Wall-clock seconds of the execution.
    """
    import nbformat
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="pme-jupyter-") as root:
        kernel = write_kernelspec(Path(root), {"PME_NOTEBOOK_FAST": "1" if fast else "0"})
        with jupyter_path(Path(root)):
            try:
                seconds = execute(nb, kernel, timeout, verbose=True)
            except CellExecutionError as err:
                raise SystemExit(f"{path.name} failed; not written:\n{err}") from None
    clean_metadata(nb, fast)
    problems = stored_problems(nb)
    if problems:
        raise SystemExit(f"{path.name}: not written: " + "; ".join(problems))
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; see the module docstring.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all)")
    speed = parser.add_mutually_exclusive_group()
    speed.add_argument("--fast", action="store_true", help="PME_NOTEBOOK_FAST=1 for all")
    speed.add_argument("--full", action="store_true", help="PME_NOTEBOOK_FAST=0 for all")
    parser.add_argument("--timeout", type=int, default=None, help="seconds per cell (no limit)")
    parser.add_argument(
        "--check", action="store_true", help="do not execute; check the stored notebooks"
    )
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.paths] or notebooks()

    if args.check:
        import nbformat

        failed = 0
        for path in paths:
            problems = stored_problems(nbformat.read(path, as_version=4))
            print(f"{path.name}: {'; '.join(problems) or 'ok'}")
            failed += bool(problems)
        return 1 if failed else 0

    for path in paths:
        fast = args.fast or (not args.full and path.name in FAST_NOTEBOOKS)
        print(f"{path.name}: executing (PME_NOTEBOOK_FAST={int(fast)}) ...", flush=True)
        seconds = run_notebook(path, fast, args.timeout)
        print(f"{path.name}: executed in {seconds:.0f} s, written", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
