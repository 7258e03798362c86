#!/usr/bin/env python3
"""Count compute-sanitizer racecheck reports per kernel in a log: ``count.py LOG``.

A report reads "Potential RAW hazard detected at __shared__ ADDR in block (B,0,0) :" and is
followed by its two accesses ("Write Thread (T,0,0) at KERNEL+OFFSET", "Read Thread ...").
Prints, per kernel, the reports by hazard type and the most frequent (access, thread, offset)
pairs, then the tool's summary and the run's own ok / WRONG lines.
"""
import collections
import re
import sys

REPORT = re.compile(r"Potential (\w+) hazard detected at __shared__ (0x[0-9a-f]+) in block \((\d+)")
ACCESS = re.compile(r"(Read|Write) Thread \((\d+),\d+,\d+\) at (?:void )?([\w:]+(?:<[^>]*>)?)"
                    r".*\+(0x[0-9a-f]+)")


def main(path: str) -> None:
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    kinds = collections.Counter()
    pairs = collections.defaultdict(collections.Counter)
    for i, line in enumerate(lines):
        m = REPORT.search(line)
        if not m:
            continue
        a = [ACCESS.search(x) for x in lines[i + 1:i + 3]]
        kernel = a[0].group(3).strip() if a[0] else "(kernel not named)"
        kinds[(kernel, m.group(1))] += 1
        if all(a):
            pairs[kernel][tuple(f"{x.group(1)} t{x.group(2)} +{x.group(4)}" for x in a)] += 1
    for line in lines:
        if ("SUMMARY" in line or " ok:" in line or "WRONG" in line
                or line.startswith(("ok ", "BAD"))):
            print(line)
    print("reports per kernel:" if kinds else "reports per kernel: none")
    for kernel in sorted({k for k, _ in kinds}):
        by = ", ".join(f"{t} {n}" for (k, t), n in sorted(kinds.items()) if k == kernel)
        print(f"  {kernel}: {by}")
        for pair, n in pairs[kernel].most_common(3):
            print(f"      {' / '.join(pair)}: {n}")


if __name__ == "__main__":
    main(sys.argv[1])
