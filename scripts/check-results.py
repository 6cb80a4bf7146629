#!/usr/bin/env python3
"""Checks that every result README.md, RELIABILITY.md and docs/*.md cite exists under bench/results/
and carries the header of bench/results/README.md: `command:`, `date:` and `device:` lines among its
first 40 lines, with a command, a date (YYYY-MM-DD) and a device that are not "not recorded".

    scripts/check-results.py          (scripts/test.sh runs it)

A citation is a path under `bench/results/`, or a name in backticks that is one (`static-h100.md`,
`nowait-h100/`, `occupancy-h100/jacobi.txt`). A cited folder carries the header in its README.md;
a cited file that is not text (a plot, an archive, a CSV) is checked for existence, and its
folder's README.md for the header. A path after `git show HASH:` cites a result that git keeps
(one removed from the tree): where this clone has HASH, the path must exist in it.

It fails when bench/results/ holds a script or a patch (`*.sh`, `*.py`, `*.patch`): a results
folder keeps raw outputs, and its README.md names the commit that holds what made them.

It also checks the index of bench/results/README.md (the table under `## Index`, the entry's name
in its first cell): every entry of bench/results/ (folder or loose file, README.md aside) has a
row, and every row names an entry that exists.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DOCUMENTS = ["README.md", "RELIABILITY.md"] + sorted(
    p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
NOT_RESULTS = {".sh", ".py", ".patch"}
TEXT = {".md", ".txt"}
FIELD = re.compile(r"^\s*(?:#+\s*|-\s+|\*\s+)?(command|date|device):\s*(\S.*)$")
DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
MISSING = re.compile(r"^`?(not recorded|unknown|none)\b", re.IGNORECASE)


def citations(text):
    """The result paths `text` cites, relative to bench/results (a folder ends in `/`); those after
    `git show HASH:` are left to `kept_by_git`."""
    found = set()
    for m in re.finditer(r"(git show [0-9A-Fa-f]{7,40}:)?bench/results/([A-Za-z0-9_.\-/]+)", text):
        if not m.group(1):
            found.add(m.group(2).rstrip(".,;:)"))
    for m in re.finditer(r"`([A-Za-z0-9_.\-/]+)`", text):
        name = m.group(1).removeprefix("bench/results/")
        if "/" not in name.rstrip("/") and not name.endswith("/") and "." not in name:
            continue
        if (RESULTS / name.rstrip("/")).exists() or re.search(r"-h100", name):
            found.add(name)
    return sorted(found)


def kept_by_git(text):
    """The (commit, path) of each `git show HASH:bench/results/PATH` in `text`."""
    return sorted({(m.group(1), "bench/results/" + m.group(2).rstrip(".,;:)"))
                   for m in re.finditer(r"git show ([0-9A-Fa-f]{7,40}):bench/results/([A-Za-z0-9_.\-/]+)",
                                        text)})


def git_has(spec):
    """Whether `git cat-file -e spec` succeeds in this repository; None without git."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", spec],
                              capture_output=True)
    except OSError:
        return None
    return done.returncode == 0


def kept_problems(commit, path):
    """A `git show` citation whose commit this clone has but whose path that commit lacks."""
    if not git_has(f"{commit}^{{commit}}"):
        return []  # no git, or a shallow clone without that commit: nothing to check against
    if git_has(f"{commit}:{path}"):
        return []
    return [f"`git show {commit}:{path}` gives nothing: {commit} has no {path}"]


def scripts_and_patches():
    """The scripts and patches under bench/results/, which keeps raw outputs only."""
    return sorted(p.relative_to(ROOT).as_posix() for p in RESULTS.rglob("*")
                  if p.is_file() and p.suffix in NOT_RESULTS)


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


def index_rows():
    """The entry each row of the index of bench/results/README.md names; None without an index."""
    rows, inside, found = [], False, False
    for line in (RESULTS / "README.md").read_text().splitlines():
        if line.startswith("## "):
            inside = line.strip() == "## Index"
            found = found or inside
            continue
        if not inside or not line.startswith("|"):
            continue
        first = line.strip().strip("|").split("|")[0].strip().strip("`").strip()
        if first in ("folder", "file", "entry") or set(first) <= set("-: "):
            continue  # the header row and the separator
        rows.append(first.rstrip("/"))
    return rows if found else None


def index_problems():
    """The entries of bench/results/ without a row in its README.md's index, the rows without an
    entry, and the entries with more than one row; and how many entries there are."""
    entries = sorted(p.name for p in RESULTS.iterdir() if p.name != "README.md")
    rows = index_rows()
    if rows is None:
        return ["bench/results/README.md has no `## Index` section"], len(entries)
    out = [f"bench/results/{e}{'/' if (RESULTS / e).is_dir() else ''} has no row in the index of "
           f"bench/results/README.md" for e in entries if e not in rows]
    out += [f"the index of bench/results/README.md names {r}, which is not an entry of bench/results/"
            for r in sorted(set(rows) - set(entries))]
    out += [f"the index of bench/results/README.md has {rows.count(r)} rows for {r}"
            for r in sorted(set(rows)) if rows.count(r) > 1]
    return out, len(entries)


def main():
    problems, checked, kept = [], 0, 0
    for document in DOCUMENTS:
        text = (ROOT / document).read_text()
        for cited in citations(text):
            checked += 1
            problems += [f"{document} cites {cited}: {p}" for p in problems_of(cited)]
        for commit, path in kept_by_git(text):
            kept += 1
            problems += [f"{document}: {p}" for p in kept_problems(commit, path)]
    unindexed, entries = index_problems()
    stray = scripts_and_patches()
    if problems:
        print("check-results: cited results without their raw output or header "
              "(bench/results/README.md says what the header holds):")
        print("\n".join(f"  {p}" for p in problems))
    if unindexed:
        print("check-results: the index of bench/results/README.md and the entries of "
              "bench/results/ disagree (one row per folder or loose file):")
        print("\n".join(f"  {p}" for p in unindexed))
    if stray:
        print("check-results: bench/results/ keeps raw outputs, not scripts or patches (remove each, "
              "and give its folder's README.md a `- reproduce: commit HASH, ...` line):")
        print("\n".join(f"  {p}" for p in stray))
    if problems or unindexed or stray:
        return 1
    print(f"check-results: {checked} citations in {', '.join(DOCUMENTS)}, each with command, date and device")
    print(f"check-results: {kept} citations of results git keeps (`git show HASH:bench/results/...`), each found")
    print(f"check-results: {entries} entries of bench/results/, each with one row in its index")
    print("check-results: no script or patch under bench/results/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
