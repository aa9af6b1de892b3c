#!/usr/bin/env python3
"""Summarises an Nsight Compute CSV (scripts/gpu-check's profile stage): per kernel name, how
many launches, their total and mean time, and the DRAM bandwidth each achieved alone.

    python3 tools/ncu_summary.py ncu.csv
"""
import csv
import re
import sys
from collections import defaultdict


def short(name):
    name = re.sub(r"\(anonymous namespace\)::|brisk::cuda::", "", name)
    name = re.sub(r"^void ", "", name)
    return re.sub(r"\(.*\)$", "", name)[:70]


def main():
    lines = [l for l in open(sys.argv[1], errors="replace") if l.startswith('"')]
    if not lines:
        print("ncu produced no rows")
        return
    kernels = defaultdict(dict)
    for row in csv.DictReader(lines):
        value = float(row["Metric Value"].replace(",", "") or 0)
        unit = row["Metric Unit"]
        scale = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1,
                 "second": 1, "byte": 1, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6, "Gbyte": 1e9,
                 "GB": 1e9}.get(unit)
        if scale is None:
            raise SystemExit(f"unknown unit {unit!r} of {row['Metric Name']}")
        k = kernels[row["ID"]]
        k["name"] = short(row["Kernel Name"])
        k[row["Metric Name"]] = value * scale
    agg = defaultdict(lambda: [0, 0.0, 0.0])
    for k in kernels.values():
        a = agg[k["name"]]
        a[0] += 1
        a[1] += k.get("gpu__time_duration.sum", 0)
        a[2] += k.get("dram__bytes_read.sum", 0) + k.get("dram__bytes_write.sum", 0)
    total = sum(a[1] for a in agg.values())
    print(f"{len(kernels)} kernels, {total * 1e3:.3f} ms in all (each timed alone)")
    print("| kernel | launches | total us | mean us | GB/s alone |")
    print("|---|---|---|---|---|")
    for name, (n, t, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name} | {n} | {t * 1e6:.0f} | {t / n * 1e6:.1f} | {b / t / 1e9 if t else 0:.0f} |")


if __name__ == "__main__":
    main()
