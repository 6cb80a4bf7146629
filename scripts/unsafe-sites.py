#!/usr/bin/env python3
"""Every `unsafe` block, function, impl and extern fn in the workspace's tracked Rust files, and the
table in scripts/miri.sh that says, for each, whether Miri runs it and if not why not.

    scripts/unsafe-sites.py list                  one line per site: file, function, line
    scripts/unsafe-sites.py check                 the table matches the sites (CI: scripts/miri.sh)
    scripts/unsafe-sites.py coverage LCOV         with an lcov file of the tests Miri runs, executed
                                                  natively with coverage (scripts/unsafe-coverage.sh):
                                                  every site the table gives to Miri was executed
                                                  (an `unsafe impl`, a trait's `unsafe fn` without
                                                  a body, and code a proc macro emits, have no
                                                  lines of their own to count)

A site belongs to the function (or `macro_rules!`) around it, by indentation, or for
`unsafe impl` to the impl (`impl Sync for WorkerView<'_>`). Table rows in scripts/miri.sh read

    #| FILE | FUNCTION | SITES | miri: WHERE          (Miri runs them, in the tests named)
    #| FILE | FUNCTION | SITES | not: WHY             (why Miri cannot run them)

and one function may have a row of each kind; its rows' SITES add up to its sites.
"""

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "scripts" / "miri.sh"
SITE = re.compile(r"\bunsafe\b\s*(\{|fn\b|impl\b|extern\b)")
FN = re.compile(r"\b(?:fn|macro_rules!)\s+([A-Za-z_0-9]+)")


def sites():
    """(file, function, line, kind, last line of its braces) for every site, in file order."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.rs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found = []
    for name in files:
        text = (ROOT / name).read_text()
        lines = text.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        enclosing = []  # (indent, function)
        for i, line in enumerate(lines):
            code = line.split("//")[0]
            indent = len(line) - len(line.lstrip())
            m = FN.search(code)
            if m:
                enclosing = [e for e in enclosing if e[0] < indent] + [(indent, m.group(1))]
            for s in SITE.finditer(code):
                kind = s.group(1)
                if kind == "impl":
                    function = "impl " + code[s.end():].split("{")[0].strip()
                else:
                    around = [e for e in enclosing if e[0] <= indent]
                    function = around[-1][1] if around else "-"
                # The braces of the block (or of the fn or impl body) the site opens; a trait's
                # `unsafe fn` without a body ends at its `;` instead.
                at = text.find("{", starts[i] + s.start())
                if kind == "fn":
                    end = declaration_end(text, starts[i] + s.start())
                    if end is not None:
                        found.append((name, function, i + 1, "decl", text.count("\n", 0, end) + 1))
                        continue
                depth, k = 0, at
                while k < len(text):
                    depth += {"{": 1, "}": -1}.get(text[k], 0)
                    if depth == 0:
                        break
                    k += 1
                found.append((name, function, i + 1, kind, text.count("\n", 0, k) + 1))
    return found


def declaration_end(text, at):
    """Where the `;` that ends a bodiless `fn` declaration starting at `at` is, or None when a body
    (`{`) comes first. A `;` inside brackets or parentheses (`[T; 2]`) does not count."""
    depth = 0
    for k in range(at, len(text)):
        c = text[k]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            return None
        elif c == ";" and depth == 0:
            return k
    return None


def table():
    """The rows of scripts/miri.sh: (file, function) -> [(count, verdict)]."""
    rows = defaultdict(list)
    for n, line in enumerate(TABLE.read_text().split("\n"), 1):
        if not line.startswith("#|"):
            continue
        cells = [c.strip() for c in line[2:].split("|")]
        if len(cells) != 4 or not cells[2].isdigit() or not re.match(r"(miri|not): \S", cells[3]):
            sys.exit(f"scripts/miri.sh:{n}: a table row reads `#| FILE | FUNCTION | SITES | miri: WHERE` or `... | not: WHY`")
        rows[(cells[0], cells[1])].append((int(cells[2]), cells[3]))
    return rows


def counts():
    by_function = defaultdict(int)
    for name, function, *_ in sites():
        by_function[(name, function)] += 1
    return by_function


def check():
    have, rows = counts(), table()
    problems = []
    for key in sorted(set(have) | set(rows)):
        listed = sum(c for c, _ in rows.get(key, []))
        if listed != have.get(key, 0):
            problems.append(f"  {key[0]} | {key[1]}: {have.get(key, 0)} unsafe sites, the table lists {listed}")
    if problems:
        print("scripts/miri.sh's table of unsafe sites is out of date (scripts/unsafe-sites.py list):")
        print("\n".join(problems))
        print("Add a row saying which Miri test runs each new site, or why Miri cannot.")
        return 1
    total = sum(have.values())
    under = sum(c for r in rows.values() for c, v in r if v.startswith("miri:"))
    print(f"unsafe sites: {total} in the table, {under} run by Miri, {total - under} not (each says why)")
    return 0


def coverage(lcov):
    executed = defaultdict(dict)
    current = None
    for line in Path(lcov).read_text().split("\n"):
        if line.startswith("SF:"):
            path = Path(line[3:])
            current = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else None
        elif line.startswith("DA:") and current:
            number, hits = line[3:].split(",")[:2]
            executed[current][int(number)] = max(executed[current].get(int(number), 0), int(hits))
    hit = defaultdict(int)
    for name, function, first, kind, last in sites():
        counts_here = [executed[name].get(n) for n in range(first, last + 1)]
        ran = any(c for c in counts_here if c)
        # An `unsafe impl` has no code of its own: its uses are what Miri checks. Code a proc
        # macro emits counts at the macro's call sites, not in its crate. A site without any
        # counted line is not in the host build (nvptx64 only, or another cfg).
        # A trait's bodiless `unsafe fn` has no code either: its implementations' rows say what runs.
        unmeasured = (
            kind if kind in ("impl", "decl") else "emitted" if name.startswith("macros/") else None
        )
        if ran or unmeasured:
            hit[(name, function)] += 1
        state = "ran" if ran else unmeasured or ("not run" if any(c is not None for c in counts_here) else "no code")
        print(f"{state:8} {name}:{first} {function}")
    status = 0
    for key, rows in sorted(table().items()):
        miri = sum(c for c, v in rows if v.startswith("miri:"))
        if hit[key] < miri:
            print(f"MISSING: {key[0]} | {key[1]}: the table gives {miri} sites to Miri, the tests ran {hit[key]}")
            status = 1
    return status


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "check"
    if command == "list":
        for name, function, line, kind, _ in sites():
            print(f"{name}:{line} | {function} | {kind}")
    elif command == "check":
        sys.exit(check())
    elif command == "coverage" and len(sys.argv) == 3:
        sys.exit(coverage(sys.argv[2]))
    else:
        sys.exit(__doc__)
