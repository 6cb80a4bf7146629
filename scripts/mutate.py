#!/usr/bin/env python3
"""Breaks the code one way at a time and runs a test command, which must fail each time.

    scripts/mutate.py TABLE.py

A results folder's table comes back with `git show HASH:bench/results/NAME/mutations.py > TABLE.py`
(HASH from the `reproduce:` line of the folder's README.md).

The table is a Python file that defines MUTATIONS, `{name: (path, before, after)}`: each replaces
the one occurrence of `before` in `path` by `after`. It may define TEST, a shell command that
exits non-zero when a test fails (default: the device crate's tile tests, which need no GPU); a
crash counts as a failure, as a failed assertion does. Run from the repository root on a clean tree; each file is restored after its
mutation, and at the end the unmutated code is tested once more. Prints one line per mutation,
CAUGHT or MISSED, and exits 1 if any was missed.
"""
import runpy
import subprocess
import sys

DEFAULT_TEST = "cargo test -q -p taskweave-device --lib tile::"


def run(test):
    """Whether `test` failed, and the lines of its output that say how."""
    done = subprocess.run(test, shell=True, capture_output=True, text=True)
    lines = (done.stdout + done.stderr).splitlines()
    telling = [l for l in lines if l.startswith("test result") or "panicked" in l or "signal" in l
               or l.startswith("error")]
    return done.returncode != 0, " | ".join(telling[:3])


def main(table):
    spec = runpy.run_path(table)
    mutations, test = spec["MUTATIONS"], spec.get("TEST", DEFAULT_TEST)
    missed = 0
    for name, (path, before, after) in mutations.items():
        original = open(path).read()
        if original.count(before) != 1:
            sys.exit(f"mutate: {name}: the text to replace occurs {original.count(before)} times in {path}")
        try:
            open(path, "w").write(original.replace(before, after))
            caught, out = run(test)
        finally:
            open(path, "w").write(original)
        missed += not caught
        print(f"{name}: {'CAUGHT' if caught else 'MISSED'}: {out[:300]}", flush=True)
    failed, out = run(test)
    print(f"unmutated: {'FAILED' if failed else 'passed'}: {out[:300]}")
    sys.exit(1 if missed or failed else 0)


if __name__ == "__main__":
    main(sys.argv[1])
