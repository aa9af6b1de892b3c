"""`python -m brisk doctor`: what this installation of brisk carries, the devices it sees, and
one real forward pass on each device checked against the CPU's float32 oracle."""

import os
import subprocess
import sys
import tempfile
import time

from . import _brisk, _cli, _libs

# Teacher-forced logits of a tiny synthetic model on a device against the CPU's exact ones:
# float32 everywhere on both sides, so they agree to rounding.
_TOLERANCE = 1e-3
_TOKENS = [1, 17, 42, 99, 7, 250, 3, 64]


def _version(v):
    return "%d.%d" % (v // 1000, v % 1000 // 10) if v else "none"


def _tiny_model(directory):
    path = os.path.join(directory, "doctor-tiny-qwen2.gguf")
    subprocess.run([_cli.executable(), "gen-model", "--arch", "qwen2", "--size", "tiny", "--dtype", "q8_0",
                    "--seed", "7", path], check=True, capture_output=True, env=_cli.environment())
    return path


def _score(path, device):
    load = _brisk.LoadOptions()
    load.device = device
    load.exact = True
    t = time.perf_counter()
    logits = _brisk.score(path, load, _TOKENS)
    return logits, time.perf_counter() - t


def _check(path, device, reference):
    try:
        logits, seconds = _score(path, device)
    except Exception as e:  # a device that cannot run is the report, not a crash
        return False, "%s: FAILED to run: %s" % (device, e)
    scale = max(1.0, max(abs(x) for x in reference))
    worst = max(abs(a - b) for a, b in zip(logits, reference)) / scale
    ok = len(logits) == len(reference) and worst <= _TOLERANCE
    return ok, "%s: forward pass of a tiny model, max |logit - CPU oracle| / max|logit| = %.2e (%s, %.0f ms)" % (
        device, worst, "ok" if ok else "MISMATCH", seconds * 1e3)


def report_lines():
    r = _brisk.device_report()
    lines = ["brisk %s (Python %s)" % (_brisk_version(), sys.version.split()[0]),
             "CPU: %d hardware threads, kernels: %s" % (r["cpu_threads"], r["cpu_isa"])]
    if r["built_with_cuda"]:
        lines.append("CUDA: built with runtime %s for sm_%s; driver supports CUDA %s" % (
            _version(r["cuda_runtime_version"]), ", sm_".join(r["cuda_archs"].split(",")), _version(r["driver_version"])))
        lib = _libs.nvidia_lib_dirs()
        lines.append("cuBLASLt: " + (lib[0] if lib else "from the system's loader path (no nvidia-cublas wheel found)"))
    else:
        lines.append("CUDA: not in this build")
    if r["built_with_cuda"] and not r["driver_version"]:
        lines.append("GPUs: none (no NVIDIA driver found)")
    elif r["cuda_note"]:
        lines.append("GPUs: none usable (%s)" % r["cuda_note"])
    for g in r["gpus"]:
        cc = g["compute_capability"]
        lines.append("GPU %d: %s, sm_%d, %.1f GiB, %s" % (g["index"], g["name"], cc, g["memory_bytes"] / 2**30,
                                                          "code for it in this build" if g["has_code"]
                                                          else "NO code for it in this build"))
    return r, lines


def _brisk_version():
    from . import __version__
    return __version__


def main():
    r, lines = report_lines()
    print("\n".join(lines))
    ok = True
    with tempfile.TemporaryDirectory() as d:
        path = _tiny_model(d)
        reference, seconds = _score(path, "cpu")
        print("cpu: forward pass of a tiny model (the float32 oracle), %.0f ms" % (seconds * 1e3))
        for g in r["gpus"]:
            good, line = _check(path, "cuda:%d" % g["index"], reference)
            ok = ok and good
            print(line)
    print("doctor: " + ("all checks passed" if ok else "some checks FAILED"))
    return 0 if ok else 1
