#!/usr/bin/env bash
# Create (once) a virtualenv and install this project into it, editable, with extras.
#
#   scripts/ensure_venv.sh VENV_DIR [--other]
#
# The interpreter comes from scripts/find_python.sh (primary, or --other for the other PyMC
# major). A stamp file VENV_DIR/.install-stamp records the interpreter, the extras and a hash of
# pyproject.toml: when all match, nothing is done; when pyproject.toml or the extras changed,
# the project is re-installed; when the interpreter changed, the venv is rebuilt.
# Exits 10 (and creates nothing) for --other when there is no interpreter of the other kind.
#
# Environment: EXTRAS (default "test"), PYTHON / PYTHON_OTHER / PRIMARY_PYTHON (see find_python.sh).
set -euo pipefail

venv=${1:?usage: ensure_venv.sh VENV_DIR [--other]}
role=${2:-}
extras=${EXTRAS:-test}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

say() { echo "[$venv] $*"; }

rc=0
py=$("$root/scripts/find_python.sh" ${role:+"$role"}) || rc=$?
if (( rc != 0 )); then
    if [[ $role == --other && $rc == 10 ]]; then
        say "no interpreter for the other PyMC major; skipping"
        exit 10
    fi
    say "no usable Python found (see message above; set PYTHON=/path/to/python3.x, or PYTHON_OTHER= for --other)"
    exit 1
fi

py_ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
if command -v sha256sum >/dev/null 2>&1; then
    hash=$(sha256sum pyproject.toml | cut -d' ' -f1)
else
    hash=$(shasum -a 256 pyproject.toml | cut -d' ' -f1)
fi
want="python=$py version=$py_ver extras=$extras pyproject=$hash"
stamp="$venv/.install-stamp"

versions() {
    "$venv/bin/python" - <<'EOF'
import sys
from importlib.metadata import version
parts = [f"Python {sys.version.split()[0]}"]
for dist in ("pymc", "pytensor", "arviz", "numpy"):
    try:
        parts.append(f"{dist} {version(dist)}")
    except Exception:
        parts.append(f"{dist} (not installed)")
print(", ".join(parts))
EOF
}

if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $venv/bin/python ]]; then
    say "up to date: $(versions)"
    exit 0
fi

start=$(date +%s)
# Rebuild the venv if it is missing, broken, or made from another interpreter.
if [[ -x $venv/bin/python ]]; then
    have=$("$venv/bin/python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || echo none)
    if [[ $have != "$py_ver" ]] || { [[ -f $stamp ]] && ! grep -qF "python=$py " "$stamp"; }; then
        say "interpreter changed ($have -> $py $py_ver); rebuilding"
        rm -rf "$venv"
    fi
elif [[ -e $venv ]]; then
    say "broken venv; rebuilding"
    rm -rf "$venv"
fi
if [[ ! -x $venv/bin/python ]]; then
    say "creating with $py (Python $py_ver)"
    "$py" -m venv "$venv"
fi
rm -f "$stamp"   # an interrupted install leaves no stamp, so the next run installs again

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off
"$venv/bin/python" -m pip install --upgrade pip
say "installing -e .[$extras]"
"$venv/bin/python" -m pip install -e ".[$extras]"
printf '%s\n' "$want" > "$stamp"
say "ready in $(( $(date +%s) - start ))s: $(versions)"
