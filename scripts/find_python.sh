#!/usr/bin/env bash
# Print the absolute path of a working Python interpreter for this project's virtualenvs.
#
#   scripts/find_python.sh            primary: a Python >= 3.12 (PyMC 6) when there is one,
#                                     else 3.11 (PyMC 5)
#   scripts/find_python.sh --other    the *other* PyMC major: 3.11 if the primary is >= 3.12,
#                                     a Python >= 3.12 if the primary is 3.11; exits 10 if none
#
# Primary search order:
#   1. $PYTHON (an override; must run and be >= 3.11)
#   2. python3.13, python3.12 on PATH (each executed: a pyenv shim for an unselected version fails)
#   3. pyenv: the newest installed 3.12.x / 3.13.x, via `pyenv prefix <version>`/bin/python
#   4. python3 (must be >= 3.11)
# Other search order:
#   $PYTHON_OTHER, then for 3.11: python3.11 on PATH, pyenv's newest 3.11.x, python3;
#   for >= 3.12: the primary order above without $PYTHON.
# The primary's version is read from $PRIMARY_PYTHON when set (the Makefile passes .venv's
# interpreter), otherwise found with the primary search.
#
# A candidate counts only if it runs, has venv + ensurepip (so `python -m venv` works) and has
# the wanted version. Messages go to stderr; stdout is the interpreter path only.
set -uo pipefail

MIN_MINOR=11       # oldest supported (PyMC 5)
NEW_MINOR=12       # first minor served by PyMC 6
MAX_MINOR=13       # newest minor tried; bump when PyMC supports a newer Python

say() { echo "find_python: $*" >&2; }

# probe CMD -> prints "X.Y.Z<TAB>/abs/executable" if CMD runs and can create venvs
probe() {
    local out
    out=$(timeout 60 "$@" -c 'import sys, venv, ensurepip
print("%d.%d.%d\t%s" % (sys.version_info[:3] + (sys.executable,)))' 2>/dev/null) || return 1
    [[ $out == *$'\t'/* ]] || return 1
    printf '%s\n' "$out"
}

minor_of() { local v=$1; v=${v#3.}; echo "${v%%.*}"; }

# accept CMD LO HI -> prints executable path if CMD's minor version is in [LO, HI]
accept() {
    local cmd=$1 lo=$2 hi=$3 info ver path minor
    info=$(probe "$cmd") || return 1
    ver=${info%%$'\t'*}; path=${info#*$'\t'}
    [[ $ver == 3.* ]] || return 1
    minor=$(minor_of "$ver")
    if (( minor < lo || minor > hi )); then return 1; fi
    say "using $path (Python $ver) [from: $cmd]"
    printf '%s\n' "$path"
}

# pyenv_pick LO HI -> newest pyenv CPython X.Y.Z with LO <= Y <= HI
pyenv_pick() {
    local lo=$1 hi=$2 ver prefix
    command -v pyenv >/dev/null 2>&1 || return 1
    ver=$(pyenv versions --bare 2>/dev/null \
        | sed 's/^[[:space:]]*//' \
        | grep -E '^3\.[0-9]+\.[0-9]+$' \
        | awk -F. -v lo="$lo" -v hi="$hi" '$2 >= lo && $2 <= hi' \
        | sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
    [[ -n $ver ]] || return 1
    prefix=$(pyenv prefix "$ver" 2>/dev/null) || return 1
    accept "$prefix/bin/python" "$lo" "$hi"
}

find_new() {   # a Python >= 3.12 (PyMC 6), no override
    local m
    for (( m = MAX_MINOR; m >= NEW_MINOR; m-- )); do
        accept "python3.$m" "$NEW_MINOR" "$MAX_MINOR" && return 0
    done
    pyenv_pick "$NEW_MINOR" "$MAX_MINOR" && return 0
    accept python3 "$NEW_MINOR" "$MAX_MINOR" && return 0
    return 1
}

find_primary() {
    if [[ -n ${PYTHON:-} ]]; then
        accept "$PYTHON" "$MIN_MINOR" 99 && return 0
        say "PYTHON=$PYTHON does not run, lacks venv/ensurepip, or is older than 3.$MIN_MINOR"
        return 1
    fi
    find_new && return 0
    accept python3 "$MIN_MINOR" 99 && return 0
    say "no usable Python >= 3.$MIN_MINOR found (tried python3.1[$NEW_MINOR-$MAX_MINOR], pyenv, python3)"
    return 1
}

find_old() {   # a Python 3.11 (PyMC 5)
    accept "python3.$MIN_MINOR" "$MIN_MINOR" "$MIN_MINOR" && return 0
    pyenv_pick "$MIN_MINOR" "$MIN_MINOR" && return 0
    accept python3 "$MIN_MINOR" "$MIN_MINOR" && return 0
    return 1
}

find_other() {
    local primary_ver pminor
    if [[ -n ${PRIMARY_PYTHON:-} ]]; then
        primary_ver=$(probe "$PRIMARY_PYTHON") || { say "PRIMARY_PYTHON=$PRIMARY_PYTHON does not run"; return 1; }
        primary_ver=${primary_ver%%$'\t'*}
    else
        local primary_path
        primary_path=$(find_primary 2>/dev/null) || { say "no primary Python"; return 1; }
        primary_ver=$(probe "$primary_path") || return 1
        primary_ver=${primary_ver%%$'\t'*}
    fi
    pminor=$(minor_of "$primary_ver")
    if [[ -n ${PYTHON_OTHER:-} ]]; then
        accept "$PYTHON_OTHER" "$MIN_MINOR" 99 && return 0
        say "PYTHON_OTHER=$PYTHON_OTHER does not run, lacks venv/ensurepip, or is older than 3.$MIN_MINOR"
        return 1
    fi
    if (( pminor >= NEW_MINOR )); then
        find_old && return 0
        say "primary is Python $primary_ver (PyMC 6); no Python 3.$MIN_MINOR found for PyMC 5"
    else
        find_new && return 0
        say "primary is Python $primary_ver (PyMC 5); no Python 3.$NEW_MINOR-3.$MAX_MINOR found for PyMC 6"
    fi
    return 10
}

case "${1:-}" in
    "") find_primary ;;
    --other) find_other ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) say "unknown argument: $1 (use --other or nothing)"; exit 2 ;;
esac
