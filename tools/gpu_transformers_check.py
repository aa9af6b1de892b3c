#!/usr/bin/env python3
"""brisk on the GPU against transformers on the same GPU (scripts/gpu-check runs it).

For llama, qwen2, qwen3 and gemma3 it builds a model from a config with random weights
(make_model_fixtures.py's configs and seeded init, widened to head_dim 128 so the
tensor-core prefill path runs), save_pretrained()s it as safetensors, computes float32
logits for 64 tokens with transformers (TF32 off), and compares `brisk logits` on
--device cuda in exact and fast mode. Prints one line per model; exits 1 on a failure.

    python3 tools/gpu_transformers_check.py --brisk build-gpu/brisk [--out report.json]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_model_fixtures as mmf  # noqa: E402

TOL = {"exact": 1e-4, "fast": 3e-2}  # relative L2 error of all logits


def widen(arch):
    spec = mmf.TINY[arch]
    spec.update({"head_dim": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 256,
                 "intermediate_size": 512})
    if arch == "gemma3":
        spec["query_pre_attn_scalar"] = 128
        spec["sliding_window"] = 24


def arguments():
    """--brisk and --out, with float32 products left exact (TF32 off) for the references."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return args


def main():
    args = arguments()
    import torch
    from transformers import AutoModelForCausalLM
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ["llama", "qwen2", "qwen3", "gemma3"]:
            widen(arch)
            d = mmf.self_test_dir(arch, 7, Path(tmp))
            model = AutoModelForCausalLM.from_pretrained(str(d), dtype=torch.float32, attn_implementation="eager").cuda()
            vocab = model.config.vocab_size
            rng = np.random.default_rng(5)
            tokens = [1] + [int(x) for x in rng.integers(3, vocab, size=63)]
            with torch.no_grad():
                ref = model(torch.tensor([tokens]).cuda()).logits[0].float().cpu().numpy()
            for mode in ["exact", "fast"]:
                out = Path(tmp) / f"{arch}_{mode}.f32"
                cmd = [args.brisk, "logits", "-m", str(d), "--device", "cuda", "--tokens",
                       ",".join(map(str, tokens)), "-o", str(out)] + (["--exact"] if mode == "exact" else [])
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                got = np.fromfile(out, dtype=np.float32).reshape(len(tokens), vocab)
                err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                argmax = float(np.mean(got.argmax(-1) == ref.argmax(-1)))
                good = err < TOL[mode]
                ok &= good
                rows.append({"arch": arch, "mode": mode, "rel_err": err, "argmax_agree": argmax, "pass": good})
                print(f"{arch:7s} {mode:5s} rel err {err:.2e} (tol {TOL[mode]:.0e}) argmax agree {argmax:.3f} "
                      f"{'ok' if good else 'FAIL'}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
