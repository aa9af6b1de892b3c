#!/usr/bin/env python3
"""Write the golden fixtures of tests/quant/quantize_test.cpp with the `gguf` package.

For each type: deterministic float rows (fixed seed; normal, outliers, zeros, edge cases),
gguf's quantized bytes of them where gguf has a quantizer (F16, BF16, Q8_0, Q4_0, Q5_0), or
random but well-formed blocks where it has none (Q4_K, Q5_K, Q6_K), and gguf's dequantized
floats of those bytes. Run from the repository root: python3 tools/make_quant_fixtures.py

File tests/golden/quant/<TYPE>.bin, little-endian:
  char[4] "BQF1"; u32 ggml_type, rows, n, has_src
  f32[rows*n] src        (only when has_src: the floats gguf quantized)
  u8[rows*row_bytes]     quantized bytes
  f32[rows*n]            gguf.quants.dequantize of those bytes
"""
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize, quantize

ROWS, N = 4, 512
OUT = os.path.join("tests", "golden", "quant")


def float_rows(rng: np.random.Generator, edge_row: bool) -> np.ndarray:
    x = np.empty((ROWS, N), dtype=np.float32)
    x[0] = rng.standard_normal(N)
    # small weights with rare large outliers, as real checkpoints have
    x[1] = 0.02 * rng.standard_normal(N)
    idx = rng.choice(N, 12, replace=False)
    x[1, idx] = rng.choice([-1.0, 1.0], 12) * rng.uniform(0.5, 3.0, 12)
    # zeros: whole zero blocks, scattered zeros, a constant block, a single-nonzero block
    x[2] = rng.uniform(-1, 1, N)
    x[2, 0:64] = 0.0
    x[2, rng.choice(N, 60, replace=False)] = 0.0
    x[2, 256:288] = 0.75
    x[2, 320:352] = 0.0
    x[2, 333] = -2.5
    if edge_row:  # half-precision edge cases: ties, subnormals, overflow, infinities
        e = np.array([65504, 65519, 65520, 1e5, -65520, 2.0**-24, 2.0**-25, 1.5 * 2.0**-25,
                      2.0**-14, 2.0**-15 * 1.5, 1e-8, -0.0, np.inf, -np.inf, 1 + 2.0**-11,
                      1 + 3 * 2.0**-11, 1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.0e38, 1e-40],
                     dtype=np.float32)
        x[3] = rng.standard_normal(N)
        x[3, : e.size] = e
    else:  # positive-only, negative-only and tiny-scale blocks
        x[3] = rng.uniform(-3, 3, N)
        x[3, 0:32] = np.abs(x[3, 0:32])
        x[3, 32:64] = -np.abs(x[3, 32:64])
        x[3, 64:128] *= 1e-6
    return x


def random_k_blocks(rng: np.random.Generator, qtype: T) -> np.ndarray:
    """Random block bytes with finite f16 super-block scales (gguf cannot quantize K-quants)."""
    block, size = GGML_QUANT_SIZES[qtype]
    nb = ROWS * N // block
    raw = rng.integers(0, 256, (nb, size), dtype=np.uint8)
    d = (rng.standard_normal(nb) * 0.01).astype(np.float16)
    dmin = (rng.standard_normal(nb) * 0.01).astype(np.float16)
    d[0] = 0  # a zero scale must decode to zeros (or -min)
    if qtype == T.Q6_K:
        raw[:, 208:210] = d.view(np.uint8).reshape(nb, 2)
    else:  # Q4_K, Q5_K: d, dmin lead the block
        raw[:, 0:2] = d.view(np.uint8).reshape(nb, 2)
        raw[:, 2:4] = dmin.view(np.uint8).reshape(nb, 2)
    return raw.reshape(ROWS, -1)


def write(qtype: T, src, q: np.ndarray, deq: np.ndarray) -> None:
    path = os.path.join(OUT, qtype.name + ".bin")
    with open(path, "wb") as f:
        f.write(b"BQF1" + struct.pack("<4I", int(qtype), ROWS, N, src is not None))
        if src is not None:
            f.write(np.ascontiguousarray(src, dtype="<f4").tobytes())
        f.write(np.ascontiguousarray(q, dtype=np.uint8).tobytes())
        f.write(np.ascontiguousarray(deq, dtype="<f4").tobytes())
    print(f"{path}: {os.path.getsize(path)} bytes")


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    for i, qtype in enumerate([T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q5_0]):
        rng = np.random.default_rng(1234 + i)
        x = float_rows(rng, edge_row=qtype in (T.F16, T.BF16))
        with np.errstate(over="ignore"):
            q = quantize(x, qtype).reshape(ROWS, -1).view(np.uint8)
        write(qtype, x, q, dequantize(q, qtype).reshape(ROWS, N))
    for i, qtype in enumerate([T.Q4_K, T.Q5_K, T.Q6_K]):
        rng = np.random.default_rng(4321 + i)
        q = random_k_blocks(rng, qtype)
        write(qtype, None, q, dequantize(q, qtype).reshape(ROWS, N))


if __name__ == "__main__":
    main()
