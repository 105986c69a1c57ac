#!/usr/bin/env bash
# Create (once) a virtualenv and install this project into it, editable, with extras.
#
#   scripts/ensure_venv.sh VENV_DIR [--other] [--extras LIST]
#
# The interpreter comes from scripts/find_python.sh (primary, or --other for the other PyMC
# major). LIST is a comma-separated list of extras from pyproject.toml ("" for none: the
# runtime dependencies only, what `make demo` uses); without --extras, $EXTRAS, else "test".
# A stamp file VENV_DIR/.install-stamp records the interpreter, the installed extras and a
# hash of pyproject.toml. Nothing is done when the interpreter and pyproject.toml match and
# the installed extras include the wanted ones (so `make demo` after `make test` reuses the
# test venv as it is); otherwise the project is re-installed with the union of the installed
# and the wanted extras; when the interpreter changed, the venv is rebuilt with the wanted
# extras only.
# Exits 10 (and creates nothing) for --other when there is no interpreter of the other kind.
#
# Environment: EXTRAS (default "test"), PYTHON / PYTHON_OTHER / PRIMARY_PYTHON (see find_python.sh).
set -euo pipefail

usage() { echo "usage: ensure_venv.sh VENV_DIR [--other] [--extras LIST]" >&2; exit 2; }

venv=${1:-}
[[ -n $venv && $venv != -* ]] || usage
shift
role=
extras=${EXTRAS-test}
while (( $# )); do
    case $1 in
        --other) role=--other ;;
        --extras) (( $# >= 2 )) || usage; extras=$2; shift ;;
        --extras=*) extras=${1#--extras=} ;;
        *) usage ;;
    esac
    shift
done
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# norm_extras "a, b,a" -> "a,b" (sorted, unique, no blanks)
norm_extras() { tr ', ' '\n\n' <<<"$*" | sed '/^$/d' | sort -u | paste -sd, -; }
# covers HAVE WANT -> true when every extra in WANT is in HAVE
covers() {
    local e
    for e in ${2//,/ }; do [[ ,$1, == *,"$e",* ]] || return 1; done
}
extras=$(norm_extras "$extras")

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
stamp="$venv/.install-stamp"
base="python=$py version=$py_ver"
# stamp_field NAME -> the value of NAME=... in the stamp ("" when absent)
stamp_field() { [[ -f $stamp ]] && tr ' ' '\n' < "$stamp" | sed -n "s/^$1=//p" | head -n 1 || true; }

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

have_extras=
if [[ -f $stamp && -x $venv/bin/python && $(cat "$stamp") == "$base "* ]]; then
    have_extras=$(stamp_field extras)
    if [[ $(stamp_field pyproject) == "$hash" ]] && covers "$have_extras" "$extras"; then
        say "up to date (extras: ${have_extras:-none}): $(versions)"
        exit 0
    fi
    extras=$(norm_extras "$have_extras,$extras")   # same interpreter: keep what is there
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
say "installing -e .${extras:+[$extras]}"
"$venv/bin/python" -m pip install -e ".${extras:+[$extras]}"
printf '%s\n' "$base extras=$extras pyproject=$hash" > "$stamp"
say "ready in $(( $(date +%s) - start ))s: $(versions)"
