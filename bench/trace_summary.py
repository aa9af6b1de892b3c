#!/usr/bin/env python3
"""Where a burst of requests spends its first second: reads a `brisk serve --trace-steps`
file (one JSON line per scheduler step) and prints, for each burst of arrivals (steps after
an idle gap), its first steps until every prompt admitted in it has its first token, then
the totals of the whole trace.

    python3 bench/trace_summary.py trace.jsonl [--gap 0.2] [--steps 40]
"""
import argparse
import json


def bursts(steps, gap):
    out, cur, last_end = [], [], None
    for s in steps:
        if last_end is not None and s["t"] - last_end > gap and cur:
            out.append(cur)
            cur = []
        cur.append(s)
        last_end = s["t"] + s["step_ms"] / 1e3
    if cur:
        out.append(cur)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--gap", type=float, default=0.2, help="idle seconds that start a new burst")
    ap.add_argument("--steps", type=int, default=40, help="steps shown per burst at most")
    a = ap.parse_args()
    with open(a.trace) as f:
        steps = [json.loads(line) for line in f if line.strip()]
    if not steps:
        print("empty trace")
        return
    for i, b in enumerate(bursts(steps, a.gap)):
        t0 = b[0]["t"]
        admitted = firsts = 0
        print(f"burst {i}: {len(b)} steps from t = {t0:.3f} s")
        print("| ms | admitted | waiting | prefill prompts | prefill tokens | prefill ms | first tokens | decode rows "
              "| collect ms | hand-out ms | step ms |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for k, s in enumerate(b):
            admitted += s["admitted"]
            firsts += s["first_tokens"]
            if k < a.steps:
                print(f"| {(s['t'] - t0) * 1e3:.1f} | {s['admitted']} | {s['waiting']} | {s['prefill_parts']} | "
                      f"{s['prefill_tokens']} | {s['prefill_ms']:.1f} | {s['first_tokens']} | {s['decode_rows']} | "
                      f"{s['collect_ms']:.1f} | {s['hand_out_ms']:.1f} | {s['step_ms']:.1f} |")
            if firsts >= admitted and s["waiting"] == 0 and k + 1 < len(b) and b[k + 1]["admitted"] == 0:
                print(f"every prompt admitted so far ({admitted}) has its first token "
                      f"{(s['t'] + s['step_ms'] / 1e3 - t0) * 1e3:.0f} ms after the burst's first step")
                break
    n = len(steps)
    tot = {k: sum(s[k] for s in steps) for k in ("prefill_ms", "collect_ms", "hand_out_ms", "step_ms")}
    dec = [s for s in steps if s["decode_rows"] and not s["prefill_parts"]]
    print(f"{n} steps: prefill {tot['prefill_ms']:.0f} ms, waiting on decode {tot['collect_ms']:.0f} ms, "
          f"hand-out {tot['hand_out_ms']:.0f} ms, in all {tot['step_ms']:.0f} ms; "
          f"decode-only steps {len(dec)}, mean {sum(s['step_ms'] for s in dec) / max(len(dec), 1):.2f} ms")


if __name__ == "__main__":
    main()
