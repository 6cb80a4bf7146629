#!/usr/bin/env python3
"""Per-kind task durations of Chrome traces written by `--trace FILE` (examples, benchmarks).

    scripts/trace-summary.py chol.json lu.json

For each file: the span from the first task's start to the last task's end, then per task kind
the count and the median, smallest and largest duration in microseconds. A blocked factorization
whose span is its step count times (factor + solve + update) is bound by its critical path.
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


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
