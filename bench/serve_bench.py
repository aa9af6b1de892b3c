#!/usr/bin/env python3
"""Serving benchmark: time to first token, inter-token latency and aggregate decode tokens/s
of `brisk serve` at several numbers of concurrent streams.

Each stream sends completions requests of exactly --prompt tokens (a token-id prompt) and
--gen generated tokens (ignore_eos), streamed; a level runs until every stream has done
--requests requests. TTFT is request start -> first token chunk; ITL is the gap between
consecutive token chunks; aggregate tokens/s is all generated tokens / the level's wall time
(prefills, queueing and the ramp up and down included); decode tokens/s counts the tokens
streamed while every request of the first wave is decoding (from the last first token of
that wave to its first last token), i.e. the steady rate at that many concurrent streams.

    python3 bench/serve_bench.py -m MODEL [--device cuda] [--levels 1,8,32,64] [--json out.jsonl]
    python3 bench/serve_bench.py --url http://127.0.0.1:8080     # a server already running
    --check-batching 32 first compares 32 greedy requests run alone and all at once.
"""
import argparse
import concurrent.futures as cf
import json
import random
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "server"))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def stream_once(client, url, prompt_ids, gen, seed):
    body = {"prompt": prompt_ids, "max_tokens": gen, "temperature": 0.8, "seed": seed, "ignore_eos": True,
            "stream": True}
    t0 = time.perf_counter()
    times = []
    with client.stream("POST", url + "/v1/completions", json=body) as r:
        r.raise_for_status()
        chunks = 0
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            chunks += 1
            if chunks > 1 and chunk.get("choices") and chunk["choices"][0].get("finish_reason") is None:
                times.append(time.perf_counter())  # one chunk per token (the text may be empty)
    return t0, times


def level(url, streams, requests, prompt_len, gen, vocab):
    rng = random.Random(streams)
    jobs = [[rng.randrange(10, vocab) for _ in range(prompt_len)] for _ in range(streams * requests)]
    # One client (a pool of `streams` connections) made before the clock starts: building a
    # client per request costs milliseconds of Python under the GIL, which a burst of
    # requests would otherwise count as time to first token.
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    with httpx.Client(timeout=600, limits=limits) as client, cf.ThreadPoolExecutor(streams) as pool:
        t_start = time.perf_counter()
        results = list(pool.map(lambda ij: stream_once(client, url, ij[1], gen, ij[0]), enumerate(jobs)))
        wall = time.perf_counter() - t_start
    ttft = [ts[0] - t0 for t0, ts in results if ts]
    itl = [b - a for _, ts in results for a, b in zip(ts, ts[1:])]
    tokens = sum(len(ts) for _, ts in results)
    first_wave = [ts for _, ts in results[:streams] if ts]
    t1, t2 = max(ts[0] for ts in first_wave), min(ts[-1] for ts in first_wave)
    steady = sum(t1 <= t <= t2 for _, ts in results for t in ts)
    decode_tok_s = (steady - 1) / (t2 - t1) if t2 > t1 and steady > 1 else float("nan")
    return {"streams": streams, "requests": len(jobs), "prompt": prompt_len, "gen": gen, "wall_s": wall,
            "tokens": tokens, "agg_tok_s": tokens / wall,
            "decode_tok_s": decode_tok_s, "steady_s": max(t2 - t1, 0.0),
            "ttft_p50_ms": pct(ttft, 50) * 1e3, "ttft_p99_ms": pct(ttft, 99) * 1e3,
            "itl_p50_ms": pct(itl, 50) * 1e3, "itl_p99_ms": pct(itl, 99) * 1e3}


def batching_check(url, n, prompt_len, gen, vocab):
    """n greedy requests with different prompts, each alone and then all at once: how many
    texts are identical, and where the others part (the batch-invariance statement)."""
    rng = random.Random(7)
    prompts = [[rng.randrange(10, vocab) for _ in range(prompt_len)] for _ in range(n)]
    def one(p):
        body = {"prompt": p, "max_tokens": gen, "temperature": 0, "ignore_eos": True, "logprobs": 1}
        r = httpx.post(url + "/v1/completions", json=body, timeout=600)
        r.raise_for_status()
        return r.json()["choices"][0]["logprobs"]["tokens"]
    alone = [one(p) for p in prompts]
    with cf.ThreadPoolExecutor(n) as pool:
        together = list(pool.map(one, prompts))
    parts = [next((i for i, (a, b) in enumerate(zip(x, y)) if a != b), None) for x, y in zip(alone, together)]
    same = sum(p is None for p in parts)
    return {"check": "batching", "requests": n, "gen": gen, "identical": same,
            "first_difference_at": sorted(p for p in parts if p is not None)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model")
    ap.add_argument("--url")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--levels", default="1,8,32,64")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--requests", type=int, default=2, help="requests per stream per level")
    ap.add_argument("--ctx", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=32000, help="token ids are drawn below this")
    ap.add_argument("--json")
    ap.add_argument("--check-batching", type=int, default=0, metavar="N",
                    help="first compare N greedy requests run alone and together")
    ap.add_argument("--serve-arg", action="append", default=[], help="extra argument for brisk serve")
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    server = None
    url = a.url
    if not url:
        from conftest import Server
        ctx = a.ctx or a.prompt + a.gen + 8
        parallel = max(levels + [a.check_batching])
        server = Server("--parallel", str(parallel), "--ctx", str(ctx), "--queue", str(parallel), *a.serve_arg,
                        model=a.model, device=a.device)
        url = server.url
    try:
        rows = []
        if a.check_batching:
            r = batching_check(url, a.check_batching, a.prompt, a.gen, a.vocab)
            rows.append(r)
            print(f"batching: {r['identical']} of {r['requests']} greedy requests identical alone and together; "
                  f"the others part at tokens {r['first_difference_at']}", flush=True)
        print("| streams | requests | aggregate tok/s | decode tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | "
              "ITL p99 ms |")
        print("|---|---|---|---|---|---|---|---|")
        for n in levels:
            r = level(url, n, a.requests, a.prompt, a.gen, a.vocab)
            rows.append(r)
            print(f"| {n} | {r['requests']} | {r['agg_tok_s']:.1f} | {r['decode_tok_s']:.1f} | {r['ttft_p50_ms']:.0f} | {r['ttft_p99_ms']:.0f} | "
                  f"{r['itl_p50_ms']:.1f} | {r['itl_p99_ms']:.1f} |", flush=True)
        metrics = {l.rsplit(" ", 1)[0]: float(l.rsplit(" ", 1)[1]) for l in httpx.get(url + "/metrics").text.splitlines()
                   if l and not l.startswith("#")}
        print(f"server: {metrics.get('brisk_preemptions_total', 0):.0f} preemptions, "
              f"{sum(v for k, v in metrics.items() if k.startswith('brisk_generations_total')):.0f} generations finished",
              flush=True)
        if a.json:
            with open(a.json, "a") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
