#!/usr/bin/env python3
"""Write tests/golden/quant/F8_E4M3.bin, the FP8 E4M3 fixture of tests/quant/fp8_test.cpp,
with ml_dtypes (the float8_e4m3fn of JAX and of PyTorch's conversions).

brisk's encoder saturates at +-448 where ml_dtypes overflows to NaN, so the inputs are
clipped to [-448, 448] before ml_dtypes encodes them; saturation is tested separately.
Run from the repository root: python3 tools/make_fp8_fixtures.py (pip install ml_dtypes)

File layout, little-endian:
  char[4] "BF81"; u32 count
  f32[256]      the value of every code (NaN for 0x7f and 0xff)
  f32[count]    inputs
  u8[count]     ml_dtypes' code for each input
"""
import os
import struct

import ml_dtypes
import numpy as np

OUT = os.path.join("tests", "golden", "quant", "F8_E4M3.bin")


def inputs() -> np.ndarray:
    rng = np.random.default_rng(8)
    codes = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    finite = codes[np.isfinite(codes)]
    mids = (np.sort(finite)[:-1] + np.sort(finite)[1:]) / 2  # every tie between neighbours
    edges = np.array([0.0, -0.0, 2.0**-9, 2.0**-10, 1.5 * 2.0**-10, 2.0**-6, 2.0**-7 * 1.99, 448.0, -448.0,
                      1e-30, 3.4e38, -3.4e38, 1.0 + 2.0**-4, 1.0 + 3 * 2.0**-4, 240.0, 464.0], dtype=np.float32)
    return np.concatenate([finite, mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
                           edges, rng.standard_normal(2000).astype(np.float32) * 50,
                           rng.standard_normal(1000).astype(np.float32) * 0.01]).astype(np.float32)


def main() -> None:
    table = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    x = inputs()
    codes = np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    with open(OUT, "wb") as f:
        f.write(b"BF81" + struct.pack("<I", x.size))
        f.write(table.astype("<f4").tobytes() + x.astype("<f4").tobytes() + codes.tobytes())
    print(f"{OUT}: {os.path.getsize(OUT)} bytes, {x.size} inputs")


if __name__ == "__main__":
    main()
