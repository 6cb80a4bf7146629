#!/usr/bin/env python3
"""Checks that every result README.md and RELIABILITY.md cite exists under bench/results/ and carries
the header of bench/results/README.md: `command:`, `date:` and `device:` lines among its first 40
lines, with a command, a date (YYYY-MM-DD) and a device that are not "not recorded".

    scripts/check-results.py          (scripts/test.sh runs it)

A citation is a path under `bench/results/`, or a name in backticks that is one (`static-h100.md`,
`nowait-h100/`, `occupancy-h100/jacobi.txt`). A cited folder carries the header in its README.md;
a cited file that is not text (a plot, an archive, a CSV) is checked for existence, and its
folder's README.md for the header.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DOCUMENTS = ["README.md", "RELIABILITY.md"]
TEXT = {".md", ".txt"}
FIELD = re.compile(r"^\s*(?:#+\s*|-\s+|\*\s+)?(command|date|device):\s*(\S.*)$")
DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
MISSING = re.compile(r"^`?(not recorded|unknown|none)\b", re.IGNORECASE)


def citations(text):
    """The result paths `text` cites, relative to bench/results (a folder ends in `/`)."""
    found = set()
    for m in re.finditer(r"bench/results/([A-Za-z0-9_.\-/]+)", text):
        found.add(m.group(1).rstrip(".,;:)"))
    for m in re.finditer(r"`([A-Za-z0-9_.\-/]+)`", text):
        name = m.group(1).removeprefix("bench/results/")
        if "/" not in name.rstrip("/") and not name.endswith("/") and "." not in name:
            continue
        if (RESULTS / name.rstrip("/")).exists() or re.search(r"-h100", name):
            found.add(name)
    return sorted(found)


def header(path):
    """The header fields of `path` (its first 40 lines)."""
    fields = {}
    with path.open(errors="replace") as f:
        for _, line in zip(range(40), f):
            m = FIELD.match(line)
            if m and m.group(1) not in fields:
                fields[m.group(1)] = m.group(2).strip()
    return fields


def problems_of(cited):
    target = RESULTS / cited.rstrip("/")
    if not target.exists():
        return [f"bench/results/{cited} does not exist"]
    if target.is_dir():
        target = target / "README.md"
        if not target.exists():
            return [f"bench/results/{cited} has no README.md to carry the header"]
    elif target.suffix not in TEXT:
        target = target.parent / "README.md"
        if not target.exists():
            return [f"bench/results/{cited} is not text, and its folder has no README.md"]
    fields = header(target)
    out = []
    for name in ["command", "date", "device"]:
        value = fields.get(name)
        where = target.relative_to(ROOT)
        if value is None:
            out.append(f"{where}: no `{name}:` line in its first 40 lines")
        elif MISSING.match(value):
            out.append(f"{where}: `{name}: {value}`: a cited result needs it")
        elif name == "date" and not DATE.search(value):
            out.append(f"{where}: `date: {value}` holds no YYYY-MM-DD date")
    return out


def main():
    problems, checked = [], 0
    for document in DOCUMENTS:
        text = (ROOT / document).read_text()
        for cited in citations(text):
            checked += 1
            problems += [f"{document} cites {cited}: {p}" for p in problems_of(cited)]
    if problems:
        print("check-results: cited results without their raw output or header "
              "(bench/results/README.md says what the header holds):")
        print("\n".join(f"  {p}" for p in problems))
        return 1
    print(f"check-results: {checked} citations in {', '.join(DOCUMENTS)}, each with command, date and device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
