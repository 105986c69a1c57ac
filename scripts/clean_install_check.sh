#!/usr/bin/env bash
# Prove that `pip install pymc_evidence` (no extras) works on both stacks.
#
#   scripts/clean_install_check.sh [--keep]        (make check-install; CI step clean-install)
#
# 1. Builds the wheel (pip wheel --no-deps) from a copy of pyproject.toml, README.md and
#    pymc_evidence/, so the checkout gets no build/ or egg-info from it.
# 2. For each stack, a fresh virtualenv: the primary interpreter (scripts/find_python.sh; a
#    Python >= 3.12 must get PyMC 6) and the other one (--other; Python 3.11 must get PyMC 5;
#    skipped with a message when there is none, as in make test-other). The wheel is
#    installed with no extras, `pip check` must pass, then scripts/clean_install_check.py
#    runs in an empty directory outside the repository (python -I: the source tree is not
#    importable): the README's quick start block as written (progress bar on), the netCDF
#    round trip of its results, a bridge run through pm.sample's progress bar and pme.compare.
# 3. Prints a summary per stack. Exit status: 0 when every stack that exists passed.
#
# Everything goes into one temporary directory (see tmp_base below; a venv is about 0.7 GB),
# removed at the end (--keep keeps it and prints where). pip's cache makes a second run fast.
# Environment: PYTHON / PYTHON_OTHER (see find_python.sh); CLEAN_INSTALL_TMP (the directory
# to work in).
set -euo pipefail

keep=0
case ${1:-} in
    "") ;;
    --keep) keep=1 ;;
    *) echo "usage: clean_install_check.sh [--keep]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off
# tmp_base -> where to work: $CLEAN_INSTALL_TMP, else /dev/shm when it has 3 GB free (a venv is
# ~0.7 GB in thousands of files; on a busy disk writing and deleting them took minutes), else
# $TMPDIR or /tmp
tmp_base() {
    local free_kb
    if [[ -n ${CLEAN_INSTALL_TMP:-} ]]; then echo "$CLEAN_INSTALL_TMP"; return; fi
    free_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
    if [[ -w /dev/shm && ${free_kb:-0} -ge 3000000 ]]; then echo /dev/shm; return; fi
    echo "${TMPDIR:-/tmp}"
}
work=$(mktemp -d "$(tmp_base)/pme-clean-install.XXXXXX")
if (( keep )); then
    trap 'echo "clean-install: kept $work"' EXIT
else
    trap 'rm -rf "$work"' EXIT
fi
t0=$(date +%s)
say() { echo "[clean-install] $*"; }
# quiet_pip PYTHON ARGS... -> pip with its output, less the notices that a configured local
# index (file://) lacks a project, which drown the few lines that matter
quiet_pip() {
    local py=$1
    shift
    "$py" -m pip "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }
    return "${PIPESTATUS[0]}"
}
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }

primary=$("$root/scripts/find_python.sh") || { say "no usable Python"; exit 1; }
rc=0
other=$(PRIMARY_PYTHON=$primary "$root/scripts/find_python.sh" --other) || rc=$?
if (( rc == 10 )); then
    other=
elif (( rc != 0 )); then
    exit "$rc"
fi

# build the wheel from a minimal copy of the sources
t=$(date +%s)
mkdir -p "$work/src" "$work/dist"
cp "$root/pyproject.toml" "$root/README.md" "$work/src/"
tar -C "$root" --exclude=__pycache__ --exclude='*.pyc' -cf - pymc_evidence | tar -C "$work/src" -xf -
quiet_pip "$primary" wheel --quiet --no-deps --wheel-dir "$work/dist" "$work/src"
wheels=("$work/dist"/pymc_evidence-*.whl)
[[ -f ${wheels[0]} ]] || { say "no wheel was built"; exit 1; }
wheel=${wheels[0]}
say "built $(basename "$wheel") in $(elapsed "$t")"

# check_stack NAME PYTHON -> fresh venv, install the wheel, run the checks
check_stack() {
    local name=$1 py=$2 minor expect venv run t
    t=$(date +%s)
    minor=$("$py" -c 'import sys; print(sys.version_info[1])')
    expect=$(( minor >= 12 ? 6 : 5 ))
    venv="$work/venv-$name" run="$work/run-$name"
    say "$name: Python 3.$minor ($py) -> expect PyMC $expect"
    "$py" -m venv "$venv"
    # --no-compile: no .pyc for all of scipy, numba, matplotlib... (half the files to write
    # and delete); Python compiles what is imported
    quiet_pip "$venv/bin/python" install --quiet --no-compile "$wheel"
    quiet_pip "$venv/bin/python" check
    say "$name: installed in $(elapsed "$t")"
    mkdir -p "$run"
    cp "$root/scripts/clean_install_check.py" "$run/check.py"
    (cd "$run" && "$venv/bin/python" -I check.py --readme "$root/README.md" --repo "$root" \
        --expect-pymc "$expect")
    say "$name: passed in $(elapsed "$t")"
    (( keep )) || rm -rf "$venv"   # free the space before the next stack
}

declare -a results=()
failed=0
for stack in "primary:$primary" "other:$other"; do
    name=${stack%%:*} py=${stack#*:}
    if [[ -z $py ]]; then
        results+=("$name: skipped (no Python for the other PyMC major)")
        continue
    fi
    # errexit is off inside an `if`/`||` test, so run the subshell plainly and read $?
    set +e
    ( set -e; check_stack "$name" "$py" ) < /dev/null
    rc=$?
    set -e
    if (( rc == 0 )); then
        results+=("$name: ok")
        mapfile -t -O "${#results[@]}" results < <(sed 's/^/    /' "$work/run-$name/summary.txt")
    else
        results+=("$name: FAILED (exit $rc)")
        failed=1
    fi
done

echo
say "summary (total $(elapsed "$t0")):"
printf '  %s\n' "${results[@]}"
exit "$failed"
