#!/usr/bin/env python3
"""Per-kind task durations of Chrome traces written by `--trace FILE` (examples, benchmarks).

    scripts/trace-summary.py chol.json lu.json

For each file: the span from the first task's start to the last task's end, then per task kind
the count and the median, smallest and largest duration in microseconds. A blocked factorization
whose span is its step count times (factor + solve + update) is bound by its critical path.

Traces that mark the path that set the span (`"path"` in each event's arguments, see
`Report::trace_path`) get a second table: per kind, the path's tasks, how long they ran, and the
gaps before them, split by what held each task: its last parent (`after`), or its worker's
previous task.
"""
import collections
import json
import statistics
import sys


def main(paths):
    for path in paths:
        with open(path) as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
        by_kind = collections.defaultdict(list)
        for e in events:
            by_kind[e["name"]].append(e["dur"])
        span = max(e["ts"] + e["dur"] for e in events) if events else 0.0
        print(f"{path}: {len(events)} tasks, span {span:.0f} us")
        for kind, durations in by_kind.items():
            print(
                f"  {kind:14} n={len(durations):7} median {statistics.median(durations):8.1f}"
                f" min {min(durations):8.1f} max {max(durations):8.1f}"
            )
        on_path(events)


def on_path(events):
    on = sorted((e for e in events if e.get("args", {}).get("path")), key=lambda e: e["ts"])
    if not on:
        return
    rows = collections.defaultdict(lambda: {"n": 0, "run": [], "gap": 0.0})
    previous = None
    for e in on:
        if previous is None:
            held = "start"
            gap = e["ts"]
        else:
            held = "parent" if e["args"].get("after") == previous["args"]["task"] else "worker"
            gap = e["ts"] - (previous["ts"] + previous["dur"])
        row = rows[(e["name"], held)]
        row["n"] += 1
        row["run"].append(e["dur"])
        row["gap"] += gap
        previous = e
    run = sum(e["dur"] for e in on)
    end = on[-1]["ts"] + on[-1]["dur"]
    print(f"  path: {len(on)} tasks, {run:.0f} us running, {end - run:.0f} us between them")
    for (kind, held), row in sorted(rows.items(), key=lambda kv: -sum(kv[1]["run"])):
        print(
            f"    {kind:14} after {held:6} n={row['n']:6} run {sum(row['run']):9.0f} us"
            f" (median {statistics.median(row['run']):7.1f}) gaps {row['gap']:8.0f} us"
            f" (mean {row['gap'] / row['n']:6.1f})"
        )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
