#!/usr/bin/env python3
"""bench/kernel_summary.py CSV [WALL]: ncu's per-kernel summary
(--print-summary per-kernel --csv, metric gpu__time_duration.sum) as a
table of total time per kernel, largest first, with its share of the
kernel time; with WALL (the same run's `--verbose 1` lines), the kernel
time against the Krylov wall time, whose difference the GPU spends idle
(launches, synchronisations, host work)."""
import collections
import csv
import re
import sys


def main():
    lines = open(sys.argv[1]).read().splitlines()
    start = next((i for i, l in enumerate(lines) if '"Kernel Name"' in l), None)
    if start is None:
        print("no per-kernel summary in", sys.argv[1])
        print("\n".join(lines[:8]))
        return 1
    tot, cnt = collections.Counter(), collections.Counter()
    unit = ""
    for r in csv.DictReader(lines[start:]):
        name = r.get("Kernel Name", r.get("Name", "?"))
        try:
            avg = float(r.get("Average", r.get("Metric Value", "0")).replace(",", ""))
            n = int(r.get("Invocations", "1").replace(",", ""))
        except ValueError:
            continue
        unit = r.get("Metric Unit", unit)
        key = re.sub(r"^void ", "", name.split("(")[0])[:72]
        tot[key] += avg * n
        cnt[key] += n
    scale = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1}.get(unit, 1e-9)
    total = sum(tot.values())
    print(f"{'ms':>9} {'share':>6} {'calls':>6} {'us/call':>8}  kernel")
    for k, v in tot.most_common(30):
        print(f"{v * scale * 1e3:9.2f} {100 * v / total:5.1f}% {cnt[k]:6d} "
              f"{v * scale * 1e6 / cnt[k]:8.1f}  {k}")
    print(f"{total * scale * 1e3:9.2f} ms of kernels, {sum(cnt.values())} launches")
    if len(sys.argv) > 2:
        wall = open(sys.argv[2]).read()
        m = re.search(r"[Kk]rylov[^0-9]*([0-9.]+) *s", wall)
        if m:
            k = float(m.group(1))
            print(f"Krylov wall {k * 1e3:.2f} ms (the kernels above include the setup and "
                  f"the reconstruction): see {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
