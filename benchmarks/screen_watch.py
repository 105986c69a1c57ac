#!/usr/bin/env python
"""How long does a first call leave the terminal unchanged? (what a user would take for a hang)

Runs a first call of ``pme.sample_evidence`` (default method, progress bars on) on one model
of ``registry.py`` in a tmux pane of 120 x 40 characters, with an empty compile
cache, and captures the pane every 0.2 s. Prints the longest stretch during which the screen
did not change, when it happened and what it showed. Needs tmux (Debian package ``tmux``).

    PYTHONPATH=. .venv/bin/python benchmarks/screen_watch.py --model mixture_2
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
from registry import build
import pymc_evidence as pme
model, _ = build({model!r}, truth=False)
print("START", flush=True)
t = time.perf_counter()
est = pme.log_evidence(pme.sample_evidence(model=model, random_seed=1))
print(est)
print(f"DONE in {{time.perf_counter() - t:.1f}} s", flush=True)
"""


def _capture(session: str) -> str:
    out = subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
    )
    return out.stdout


def watch(model: str, interval: float = 0.2, timeout: float = 900.0) -> dict:
    session = f"pme_watch_{os.getpid()}"
    with (
        tempfile.TemporaryDirectory() as cache,
        tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script,
    ):
        script.write(CHILD.format(here=str(HERE), model=model))
        script.flush()
        env = f"PYTENSOR_FLAGS=base_compiledir={cache} PYTHONPATH={HERE.parent}"
        cmd = f"{env} {shlex.quote(sys.executable)} {script.name}; sleep 30"
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", cmd],
            check=True,
        )
        try:
            return _follow(session, interval, timeout)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _follow(session, interval, timeout) -> dict:
    t0 = time.perf_counter()
    while "START" not in _capture(session):  # imports and model building: not the call
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError("the child never started")
        time.sleep(interval)
    start = last_change = time.perf_counter()
    screen, longest = _capture(session), (0.0, 0.0, "")
    while "DONE in" not in screen and time.perf_counter() - start < timeout:
        time.sleep(interval)
        now, new = time.perf_counter(), _capture(session)
        if new != screen:
            if now - last_change > longest[0]:
                longest = (now - last_change, last_change - start, screen)
            screen, last_change = new, now
    return {
        "longest_unchanged_s": longest[0],
        "at_s": longest[1],
        "screen": longest[2].strip(),
        "final": screen.strip(),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="mixture_2")
    parser.add_argument("--interval", type=float, default=0.2)
    args = parser.parse_args(argv)
    result = watch(args.model, args.interval)
    print(
        f"longest unchanged screen: {result['longest_unchanged_s']:.1f} s, from "
        f"{result['at_s']:.1f} s into the call; it showed:\n{result['screen']}\n"
    )
    print(f"final screen:\n{result['final']}")


if __name__ == "__main__":
    main()
