"""Run the README quick start against an installed ``pymc_evidence`` (no extras) and check it.

Run by ``scripts/clean_install_check.sh`` with the Python of a fresh virtualenv, in an empty
directory outside the repository and with ``python -I`` so that the source tree cannot be
imported::

    python -I clean_install_check.py --readme README.md --repo . --expect-pymc 6

Steps, each failing with a message that says what broke:

1. ``pymc_evidence`` comes from the venv (not the checkout) and no test or docs tool came
   with it (a runtime dependency that pulls one in is a packaging bug).
2. The first ``python`` code block under ``## Quick start`` in the README, read from the file
   (so the docs and this check cannot drift), runs as written: progress bar on (the
   default), ``idata.to_netcdf("run.nc")`` in the working directory.
3. ``run.nc`` read back with ArviZ's loader (``az.from_netcdf``: ``InferenceData`` on PyMC 5,
   ``xarray.DataTree`` on PyMC 6) has every group, an identical ``log_evidence`` group and
   the same estimate.
4. A short ``method="bridge"`` run with the progress bar on (it goes through ``pm.sample``,
   whose PyMC 6 progress bar imports matplotlib) and ``pme.compare`` of the two results.

Only the standard library is imported before step 2, so a broken install fails there with
the import error a user would see. The summary goes to ``summary.txt`` in the working
directory.
"""

from __future__ import annotations

import argparse
import builtins
import importlib.util
import os
import sys
import time
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HEADING = "## Quick start"
# Tools of the test/docs extras: none may come with a plain install.
EXTRA_ONLY = ("pytest", "ruff", "sphinx", "numpydoc", "nbclient", "ipykernel")


class CheckError(RuntimeError):
    """A failed check; its message is printed as the reason."""


def quick_start_code(readme: Path) -> str:
    """Return the first ```python block after the ``## Quick start`` heading of ``readme``.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "README.md"
    >>> _ = path.write_text("## Quick start\\n\\n```python\\nx = 1\\n```\\n")
    >>> quick_start_code(path)
    'x = 1\\n'
    """
    lines = readme.read_text(encoding="utf-8").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == HEADING)
    except StopIteration:
        raise CheckError(f"{readme}: no '{HEADING}' heading") from None
    block: list[str] | None = None
    for line in lines[start + 1 :]:
        if block is None:
            if line.startswith("## "):
                break
            if line.strip() == "```python":
                block = []
        elif line.strip() == "```":
            return "\n".join(block) + "\n"
        else:
            block.append(line)
    raise CheckError(f"{readme}: no complete ```python block under '{HEADING}'")


def check_installed(repo: Path, expect_pymc: int | None) -> str:
    """Check where ``pymc_evidence`` comes from and what came with it; return the versions."""
    spec = importlib.util.find_spec("pymc_evidence")
    if spec is None or spec.origin is None:
        raise CheckError("pymc_evidence is not installed in this environment")
    origin = Path(spec.origin).resolve()
    if origin.is_relative_to(repo.resolve()):
        raise CheckError(f"pymc_evidence imported from the source tree ({origin})")
    present = [name for name in EXTRA_ONLY if importlib.util.find_spec(name) is not None]
    if present:
        raise CheckError(f"installed with no extras, yet {present} are present")
    pymc_major = int(version("pymc").split(".")[0])
    if expect_pymc is not None and pymc_major != expect_pymc:
        raise CheckError(f"expected PyMC {expect_pymc}.x here, pip installed {version('pymc')}")
    dists = ("pymc_evidence", "pymc", "pytensor", "arviz", "xarray", "numpy", "h5netcdf")
    return f"Python {sys.version.split()[0]}, " + ", ".join(f"{d} {_version(d)}" for d in dists)


def _version(dist: str) -> str:
    """The installed version of ``dist``, or ``(not installed)``."""
    try:
        return version(dist)
    except PackageNotFoundError:
        return "(not installed)"


def run_quick_start(code: str) -> tuple[dict, list[str]]:
    """Execute the quick start; return its namespace and the lines it printed."""
    printed: list[str] = []

    def recording_print(*args, **kwargs):
        builtins.print(*args, **kwargs)
        if kwargs.get("file") in (None, sys.stdout):
            printed.append(kwargs.get("sep", " ").join(map(str, args)))

    namespace = {"__name__": "__quick_start__", "print": recording_print}
    exec(compile(code, "README.md (quick start)", "exec"), namespace)
    for name in ("idata", "est", "model"):
        if name not in namespace:
            raise CheckError(f"the quick start defines no '{name}'; update this check")
    if not Path("run.nc").is_file():
        raise CheckError("the quick start wrote no run.nc")
    return namespace, printed


def as_dataset(group):
    """An ``xarray.Dataset`` from an ``InferenceData`` group or a ``DataTree`` node."""
    return group.to_dataset() if hasattr(group, "to_dataset") else group


def group_names(idata) -> list[str]:
    """Group names of an ``InferenceData`` or the children of a ``DataTree``."""
    return list(idata.children) if hasattr(idata, "children") else list(idata.groups())


def check_round_trip(idata, est) -> str:
    """Read ``run.nc`` back with ArviZ and compare it with the results in memory."""
    import arviz as az
    import xarray as xr

    import pymc_evidence as pme

    back = az.from_netcdf("run.nc")
    if type(back) is not type(idata):
        raise CheckError(f"az.from_netcdf gave {type(back).__name__}, not {type(idata).__name__}")
    if group_names(back) != group_names(idata):
        raise CheckError(f"groups {group_names(idata)} came back as {group_names(back)}")
    original = as_dataset(idata.log_evidence)
    loaded = as_dataset(back.log_evidence).load()
    try:
        xr.testing.assert_identical(loaded, original)
    except AssertionError as err:
        raise CheckError(f"log_evidence group changed in the round trip:\n{err}") from None
    again = pme.log_evidence(back)
    if (again.log_z, again.se) != (est.log_z, est.se):
        raise CheckError(f"estimate read back as {again}, written as {est}")
    return (
        f"round trip OK: {len(group_names(back))} groups, log_evidence identical "
        f"({len(original.data_vars)} variables), log Z read back {again.log_z:.3f} ± {again.se:.3f}"
    )


def check_bridge_and_compare(model, idata) -> list[str]:
    """A short bridge-sampling run (``pm.sample`` with its progress bar) and ``pme.compare``."""
    import pymc_evidence as pme

    with model:
        other = pme.sample_evidence(
            method="bridge", draws=300, tune=300, chains=2, cores=1, random_seed=2
        )
    with warnings.catch_warnings():  # two methods on one model, on purpose
        warnings.filterwarnings("ignore", "Comparing estimates from different methods")
        table = pme.compare({"smc": idata, "bridge": other})
    if len(table) != 2 or "log_z" not in table.columns:
        raise CheckError(f"pme.compare gave an unexpected table:\n{table}")
    return [f"bridge: {pme.log_evidence(other)}", "compare OK:", table.to_string()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readme", type=Path, required=True, help="the README.md to run")
    parser.add_argument("--repo", type=Path, required=True, help="the checkout (not imported)")
    parser.add_argument("--expect-pymc", type=int, help="the PyMC major this venv must have")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the checks in the current directory; print a summary; 0 when all pass."""
    args = parse_args(argv)
    if Path.cwd().resolve().is_relative_to(args.repo.resolve()):
        print("clean-install: run me outside the repository", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        code = quick_start_code(args.readme)
        versions = check_installed(args.repo, args.expect_pymc)
        print(f"versions: {versions}", flush=True)
        namespace, printed = run_quick_start(code)
        summary = [f"versions: {versions}", f"quick start printed: {' | '.join(printed)}"]
        summary.append(check_round_trip(namespace["idata"], namespace["est"]))
        summary += check_bridge_and_compare(namespace["model"], namespace["idata"])
    except CheckError as err:
        print(f"clean-install FAILED: {err}", file=sys.stderr)
        return 1
    summary.append(f"checks took {time.perf_counter() - start:.0f}s (cwd {os.getcwd()})")
    Path("summary.txt").write_text("\n".join(summary) + "\n", encoding="utf-8")
    print("clean-install: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
