#!/usr/bin/env python3
"""Reference logits for brisk's tiny synthetic models (llama, qwen2, qwen3, gemma3).

Normal mode (needs the brisk binary):

    python3 tools/make_model_fixtures.py --brisk build/brisk [--seed 1234] [--arch llama ...]

  For every architecture it runs
      brisk gen-model --arch A --format hf --size tiny --seed S TMP/A
  which must write an HF directory (config.json, model.safetensors with float32
  tensors under the standard HF names, generation_config.json). The directory is
  loaded with transformers (AutoModelForCausalLM, float32, eager attention) and
  tests/golden/models/<arch>_tiny.json is written:

      {"arch", "seed", "tokens": [24 ids], "logits": [[vocab] x 24] (6 significant
       digits), "greedy": [32 ids], ...}

  "logits"[i] are the logits at position i for the input "tokens" (one forward,
  causal). "greedy" continues "tokens" by 32 argmax steps (lowest id on ties,
  no penalties, eos ignored, nothing suppressed); every step is a full forward
  over tokens + greedy so far (no KV cache); a KV-cache decode is run as a
  cross-check and must agree.

  Before running, the script checks that transformers reads brisk's config.json
  as exactly the TINY config below (semantic comparison, so the legacy
  rope_theta / rope_scaling / rope_local_base_freq spellings are accepted too;
  literal differences from tests/golden/models/<arch>_tiny_config.json, the
  file transformers itself writes, are printed for information), and refuses
  weights that transformers would have to initialise itself (missing /
  unexpected tensors) or that are not float32.

Self-test mode (no brisk needed):

    python3 tools/make_model_fixtures.py --self-test [--out-dir DIR]

  Builds the same four configs with transformers directly, initialises the
  weights from a seeded torch generator, save_pretrained()s them to temp dirs
  and runs the same pipeline. The resulting logits JSONs go to --out-dir (a temp
  dir by default: they are NOT brisk's weights and must not replace the golden
  files). It also writes tests/golden/models/<arch>_tiny_config.json, the exact
  config.json transformers writes for each tiny config, for the C++ generator to
  mirror (pass --no-write-configs to skip).

Needs: torch, transformers, safetensors, numpy.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "models"

ARCHS = ["llama", "qwen2", "qwen3", "gemma3"]
N_TOKENS = 24
N_GREEDY = 32
TOKEN_SEED = 20250101   # seeds the fixed input token list (same for every arch)
DEFAULT_SEED = 1234     # model seed passed to `brisk gen-model --seed`

# ---------------------------------------------------------------------------
# The tiny configs `brisk gen-model --size tiny` writes. Rope is given once in
# the modern form (rope_parameters); hf_config() converts it for transformers
# versions that still take rope_theta / rope_scaling / rope_local_base_freq.
COMMON = {
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-6,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

TINY = {
    "llama": {
        "class": "LlamaForCausalLM", "config_class": "LlamaConfig",
        "head_dim": 16, "num_hidden_layers": 2,
        "tie_word_embeddings": False, "attention_bias": False,
        "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 64},
    },
    "qwen2": {  # q/k/v biases are built into Qwen2Attention (o_proj has none)
        "class": "Qwen2ForCausalLM", "config_class": "Qwen2Config",
        "num_hidden_layers": 2, "tie_word_embeddings": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    "qwen3": {  # head_dim 32 != hidden_size / num_attention_heads (16)
        "class": "Qwen3ForCausalLM", "config_class": "Qwen3Config",
        "head_dim": 32, "num_hidden_layers": 2, "tie_word_embeddings": False,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    "gemma3": {  # Gemma3ForCausalLM on a Gemma3TextConfig (model_type gemma3_text)
        "class": "Gemma3ForCausalLM", "config_class": "Gemma3TextConfig",
        "head_dim": 32, "num_hidden_layers": 6, "sliding_window": 8,
        # layer i is sliding unless (i + 1) % 6 == 0
        "layer_types": ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(6)],
        "query_pre_attn_scalar": 32, "hidden_activation": "gelu_pytorch_tanh",
        "final_logit_softcapping": None, "attn_logit_softcapping": None,
        "tie_word_embeddings": True,
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        },
    },
}


def fixed_tokens(vocab: int, bos: int) -> list[int]:
    rng = np.random.default_rng(TOKEN_SEED)
    return [bos] + [int(x) for x in rng.integers(0, vocab, size=N_TOKENS - 1)]


def sig6(x: float) -> float:
    return float(f"{float(x):.6g}")


# ---------------------------------------------------------------------------
def hf_config(arch: str):
    """transformers config object for TINY[arch], for the installed version."""
    import transformers
    spec = copy.deepcopy(TINY[arch])
    cls = getattr(transformers, spec.pop("config_class"))
    model_cls = spec.pop("class")
    kw = dict(COMMON)
    kw.update(spec)
    fields = getattr(cls, "__dataclass_fields__", None)
    import inspect
    params = set(fields) if fields else set(inspect.signature(cls.__init__).parameters)
    if "rope_parameters" not in params:  # transformers 4.x: legacy rope keys
        rp = kw.pop("rope_parameters")
        if arch == "gemma3":
            kw["rope_theta"] = rp["full_attention"]["rope_theta"]
            kw["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"]
            kw["rope_scaling"] = None
        else:
            kw["rope_theta"] = rp["rope_theta"]
            extra = {k: v for k, v in rp.items() if k != "rope_theta"}
            kw["rope_scaling"] = None if extra.get("rope_type") == "default" else extra
    if arch == "gemma3" and "layer_types" not in params:
        kw.pop("layer_types")
        kw["sliding_window_pattern"] = 6
    cfg = cls(**kw)
    cfg.architectures = [model_cls]
    return cfg


def init_weights_(model, seed: int) -> None:
    """Seeded, version-independent init with O(1) logits (HF's default init
    gives near-zero logits whose argmax is noise). Matrices ~ N(0, 1/sqrt(fan_in)),
    biases ~ N(0, 0.1), norm weights 1 + N(0, 0.1) (Gemma stores w for 1 + w,
    so there N(0, 0.1)), embeddings ~ N(0, 1)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    gemma = "gemma" in model.config.model_type
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if "norm" in name:
                base = 0.0 if gemma else 1.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                scale = 1.0 / model.config.hidden_size ** 0.5 if gemma else 1.0  # gemma scales by sqrt(h)
                p.copy_(scale * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5)


def self_test_dir(arch: str, seed: int, root: Path) -> Path:
    import torch
    from transformers import AutoModelForCausalLM
    cfg = hf_config(arch)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation="eager")
    init_weights_(model, seed)
    model.generation_config.bos_token_id = COMMON["bos_token_id"]
    model.generation_config.eos_token_id = COMMON["eos_token_id"]
    out = root / arch
    model.save_pretrained(out, safe_serialization=True)
    return out


def brisk_dir(brisk: str, arch: str, seed: int, root: Path) -> Path:
    out = root / arch
    cmd = [brisk, "gen-model", "--arch", arch, "--format", "hf", "--size", "tiny", "--seed", str(seed), str(out)]
    print("+ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    for f in ("config.json", "model.safetensors"):
        if not (out / f).is_file():
            raise SystemExit(f"error: {cmd[0]} gen-model did not write {out / f}")
    return out


# ---------------------------------------------------------------------------
IGNORED_CONFIG_KEYS = {"transformers_version", "dtype", "torch_dtype", "_name_or_path"}


def compare_configs(got: dict, want: dict, path: str = "") -> list[str]:
    diffs = []
    for k in sorted(set(got) | set(want)):
        if not path and k in IGNORED_CONFIG_KEYS:
            continue
        p = f"{path}.{k}" if path else k
        if k not in got:
            diffs.append(f"missing {p} (transformers writes {json.dumps(want[k])})")
        elif k not in want:
            diffs.append(f"extra {p} = {json.dumps(got[k])}")
        elif isinstance(got[k], dict) and isinstance(want[k], dict):
            diffs += compare_configs(got[k], want[k], p)
        elif got[k] != want[k] and not (isinstance(got[k], (int, float)) and isinstance(want[k], (int, float))
                                        and float(got[k]) == float(want[k])):
            diffs.append(f"{p}: {json.dumps(got[k])} != {json.dumps(want[k])}")
    return diffs


def check_safetensors(path: Path) -> None:
    from safetensors import safe_open
    with safe_open(str(path), framework="np") as f:
        for k in f.keys():
            dt = f.get_slice(k).get_dtype()
            if dt != "F32":
                raise SystemExit(f"error: {path}: tensor {k} has dtype {dt}, expected F32")


def run_pipeline(arch: str, model_dir: Path, seed: int, source: str) -> dict:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    cfg_json = json.loads((model_dir / "config.json").read_text())
    check_safetensors(model_dir / "model.safetensors")
    model, info = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"error: {arch}: weights do not match {type(model).__name__}: {bad}")
    model.eval()
    want_cls = TINY[arch]["class"]
    if type(model).__name__ != want_cls:
        raise SystemExit(f"error: {arch}: transformers built {type(model).__name__}, expected {want_cls}")
    if next(model.parameters()).dtype != torch.float32:
        raise SystemExit(f"error: {arch}: model is not float32")

    vocab = model.config.vocab_size
    tokens = fixed_tokens(vocab, cfg_json.get("bos_token_id", COMMON["bos_token_id"]))

    cache_kw = "cache" if "cache" in __import__("inspect").signature(model.forward).parameters else "past_key_values"
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([tokens]), use_cache=False).logits[0].float().numpy()
        assert logits.shape == (N_TOKENS, vocab) and np.all(np.isfinite(logits))
        seq, greedy, margin = list(tokens), [], float("inf")
        for _ in range(N_GREEDY):
            last = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1].float().numpy()
            greedy.append(int(np.argmax(last)))
            seq.append(greedy[-1])
            top2 = np.sort(last)[-2:]
            margin = min(margin, float(top2[1] - top2[0]))
        # cross-check: incremental decode with transformers' KV cache
        out = model(input_ids=torch.tensor([tokens]), use_cache=True)
        past, cgreedy = out.past_key_values, []
        for _ in range(N_GREEDY):
            cgreedy.append(int(torch.argmax(out.logits[0, -1])))
            out = model(input_ids=torch.tensor([[cgreedy[-1]]]), use_cache=True, **{cache_kw: past})
            past = out.past_key_values
    if cgreedy != greedy:
        raise SystemExit(f"error: {arch}: KV-cache greedy {cgreedy} != full-recompute greedy {greedy}")
    return {
        "arch": arch,
        "seed": seed,
        "source": source,
        "model_type": cfg_json.get("model_type"),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "semantics": "logits[i] = logits at position i for input tokens (float32, 6 significant digits); "
                     f"greedy = {N_GREEDY} argmax continuation ids of tokens (lowest id on ties, eos ignored, "
                     "full forward per step)",
        "tokens": tokens,
        "greedy": greedy,
        # smallest top1 - top2 logit gap over the greedy steps (a tiny gap = fragile fixture)
        "greedy_min_margin": sig6(margin),
        "logits": [[sig6(v) for v in row] for row in logits],
    }


def dump(doc: dict) -> str:
    d = lambda v: json.dumps(v, separators=(",", ":"))
    lines = ["{"]
    keys = [k for k in doc if k != "logits"]
    for k in keys:
        lines.append(f"{d(k)}:{d(doc[k])},")
    lines.append('"logits":[')
    rows = doc["logits"]
    for i, row in enumerate(rows):
        lines.append(d(row) + ("," if i + 1 < len(rows) else ""))
    lines.append("]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--brisk", metavar="PATH", help="brisk binary; runs `brisk gen-model` per arch")
    mode.add_argument("--self-test", action="store_true",
                      help="no brisk: build the tiny models with transformers (seeded random init)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"model seed (default {DEFAULT_SEED})")
    ap.add_argument("--arch", action="append", choices=ARCHS, help="restrict to these archs (repeatable)")
    ap.add_argument("--out-dir", type=Path, default=None,
                    help="where <arch>_tiny.json go (default: tests/golden/models with --brisk, "
                         "a temp dir with --self-test)")
    ap.add_argument("--keep", type=Path, default=None, help="also keep the generated model dirs here")
    ap.add_argument("--no-write-configs", action="store_true",
                    help="--self-test: do not (re)write tests/golden/models/<arch>_tiny_config.json")
    ap.add_argument("--allow-config-diff", action="store_true",
                    help="--brisk: only warn when transformers reads brisk's config.json differently from TINY")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    args = ap.parse_args()

    import torch
    import transformers
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    archs = args.arch or ARCHS
    tmp = Path(tempfile.mkdtemp(prefix="brisk_model_fixtures_"))
    out_dir = args.out_dir or (GOLDEN if args.brisk else tmp / "fixtures")
    out_dir.mkdir(parents=True, exist_ok=True)
    status = 0
    try:
        for arch in archs:
            if args.self_test:
                mdir = self_test_dir(arch, args.seed, tmp / "models")
                if not args.no_write_configs:
                    GOLDEN.mkdir(parents=True, exist_ok=True)
                    cfg_text = (mdir / "config.json").read_text()
                    (GOLDEN / f"{arch}_tiny_config.json").write_text(cfg_text)
                    print(f"wrote {GOLDEN / f'{arch}_tiny_config.json'}", file=sys.stderr)
                source = "self-test: transformers from_config + seeded init (NOT brisk weights)"
            else:
                mdir = brisk_dir(os.path.abspath(args.brisk), arch, args.seed, tmp / "models")
                # Semantic check: what transformers makes of brisk's config.json must equal
                # the TINY table (legacy rope_theta/rope_scaling spellings are fine).
                from transformers import AutoConfig
                got = AutoConfig.from_pretrained(str(mdir)).to_dict()
                diffs = compare_configs(got, hf_config(arch).to_dict())
                errors = [x for x in diffs if not x.startswith("extra ")]
                for x in diffs:
                    print(f"{arch}: config {'ERROR' if x in errors else 'note'}: {x}", file=sys.stderr)
                ref = GOLDEN / f"{arch}_tiny_config.json"
                if ref.is_file():
                    raw = compare_configs(json.loads((mdir / "config.json").read_text()), json.loads(ref.read_text()))
                    for x in raw:
                        print(f"{arch}: config.json vs {ref.name} (literal, informational): {x}", file=sys.stderr)
                if errors and not args.allow_config_diff:
                    status = 1
                    continue
                source = f"brisk gen-model --arch {arch} --format hf --size tiny --seed {args.seed}"
            doc = run_pipeline(arch, mdir, args.seed, source)
            text = dump(doc)
            path = out_dir / f"{arch}_tiny.json"
            path.write_text(text)
            print(f"wrote {path} ({len(text) / 1024:.0f} KiB) greedy={doc['greedy']}", file=sys.stderr)
            if args.keep:
                dst = args.keep / arch
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(mdir, dst)
    finally:
        if args.self_test and args.out_dir is None:
            print(f"self-test fixtures left in {out_dir}", file=sys.stderr)
            shutil.rmtree(tmp / "models", ignore_errors=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
