#!/usr/bin/env python3
"""brisk on FP8 checkpoints that transformers writes, against transformers (scripts/gpu-check).

For llama and qwen3 it builds a model with random weights (gpu_transformers_check.py's
widened configs), lets transformers quantize it to FP8 E4M3 in 128 x 128 blocks
(FineGrainedFP8Config, the layout of Qwen3's FP8 releases: weight + weight_scale_inv) and
save_pretrained()s it. Two references for 64 tokens:
  - "dequantized": the saved FP8 weights times their block scales, in a float32 model
    (what the file holds, exactly); brisk's exact mode must match it within 1e-4, its fast
    mode (FP8 activations on sm_89+) within 8e-2;
  - "transformers-fp8": transformers' own FP8 forward (its dynamic per-token, per-128 FP8
    activations), where it runs; brisk's fast mode within 8e-2.
Prints one line per comparison; exits 1 on a failure.

    python3 tools/gpu_transformers_fp8_check.py --brisk build-gpu/brisk [--out report.json]
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_transformers_check as gtc  # noqa: E402
import make_model_fixtures as mmf  # noqa: E402

TOL = {"exact": 1e-4, "fast": 8e-2, "transformers-fp8": 8e-2}


def rel_err(got, ref):
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def dequantized_state(fp8_dir):
    """The saved tensors, FP8 matrices times their 128 x 128 block scales, as float32."""
    import torch
    from safetensors.torch import load_file
    state = {}
    for f in sorted(Path(fp8_dir).glob("*.safetensors")):
        state.update(load_file(str(f)))
    out = {}
    for name, t in state.items():
        if name.endswith("_scale_inv"):
            continue
        inv = state.get(name + "_scale_inv")
        if inv is None:
            out[name] = t.float()
            continue
        rows, cols = t.shape
        s = inv.float().repeat_interleave(128, 0)[:rows].repeat_interleave(128, 1)[:, :cols]
        out[name] = t.float() * s
    return out


def brisk_logits(brisk, model_dir, tokens, mode, tmp):
    out = Path(tmp) / f"logits_{mode}.f32"
    cmd = [brisk, "logits", "-m", str(model_dir), "--device", "cuda", "--tokens", ",".join(map(str, tokens)),
           "-o", str(out)] + (["--exact"] if mode == "exact" else [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return np.fromfile(out, dtype=np.float32)


def check_arch(arch, brisk, tmp):
    import torch
    from transformers import AutoModelForCausalLM, FineGrainedFP8Config
    gtc.widen(arch)
    src = mmf.self_test_dir(arch, 11, Path(tmp))
    fp8_dir = Path(tmp) / f"{arch}_fp8"
    q = AutoModelForCausalLM.from_pretrained(str(src), dtype=torch.bfloat16,
                                             quantization_config=FineGrainedFP8Config(weight_block_size=(128, 128)),
                                             device_map="cuda")
    q.save_pretrained(str(fp8_dir))
    vocab = q.config.vocab_size
    rng = np.random.default_rng(5)
    tokens = [1] + [int(x) for x in rng.integers(3, vocab, size=63)]
    rows = []
    # transformers' FP8 forward (Triton kernels), where this machine runs it.
    try:
        with torch.no_grad():
            fp8_ref = q(torch.tensor([tokens]).cuda()).logits[0].float().cpu().numpy()
    except Exception as e:  # noqa: BLE001 - reported, not fatal: the exact reference stands alone
        fp8_ref = None
        rows.append({"arch": arch, "ref": "transformers-fp8", "error": f"{type(e).__name__}: {e}"[:300]})
    del q
    f32 = AutoModelForCausalLM.from_pretrained(str(src), dtype=torch.float32, attn_implementation="eager")
    missing, unexpected = f32.load_state_dict(dequantized_state(fp8_dir), strict=False)
    if unexpected or [m for m in missing if not m.endswith("lm_head.weight")]:
        raise RuntimeError(f"{arch}: state mismatch, missing {missing[:4]}, unexpected {unexpected[:4]}")
    f32.tie_weights()
    f32 = f32.cuda()
    with torch.no_grad():
        ref = f32(torch.tensor([tokens]).cuda()).logits[0].float().cpu().numpy()
    for mode in ["exact", "fast"]:
        got = brisk_logits(brisk, fp8_dir, tokens, mode, tmp).reshape(ref.shape)
        rows.append({"arch": arch, "ref": "dequantized", "mode": mode, "rel_err": rel_err(got, ref), "tol": TOL[mode]})
        if mode == "fast" and fp8_ref is not None:
            rows.append({"arch": arch, "ref": "transformers-fp8", "mode": mode, "rel_err": rel_err(got, fp8_ref),
                         "tol": TOL["transformers-fp8"]})
    return rows


def main():
    args = gtc.arguments()
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ["llama", "qwen3"]:
            try:
                rows += check_arch(arch, args.brisk, tmp)
            except Exception as e:  # noqa: BLE001 - one line per failure, then the next arch
                rows.append({"arch": arch, "error": f"{type(e).__name__}: {e}"[:400]})
    for r in rows:
        if "rel_err" in r:
            good = r["rel_err"] < r["tol"]
            ok &= good
            print(f"fp8 {r['arch']} {r['mode']} vs {r['ref']}: rel err {r['rel_err']:.2e} (tol {r['tol']:.0e})"
                  f"{'' if good else '  FAIL'}")
        else:
            ok &= r.get("ref") == "transformers-fp8"  # only transformers' own FP8 forward may be missing
            print(f"fp8 {r['arch']} {r.get('ref', '')}: Error {r['error']}")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
