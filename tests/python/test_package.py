"""The wheel's other doors: the brisk command as a console script, and python -m brisk doctor."""
import os
import shutil
import subprocess
import sys

import brisk


def test_the_cli_is_a_console_script():
    exe = shutil.which("brisk")
    assert exe and os.path.dirname(exe) == os.path.dirname(sys.executable)
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    for verb in ("run", "chat", "serve", "bench", "inspect", "quantize"):
        assert verb in out


def test_the_cli_runs_a_model(model_path):
    out = subprocess.run(["brisk", "run", "-m", model_path, "--device", "cpu", "-t", "2", "-p", "Hello", "-n", "4",
                          "--temp", "0"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


def test_doctor_checks_every_device():
    out = subprocess.run([sys.executable, "-m", "brisk", "doctor"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cpu: forward pass" in out.stdout
    assert "doctor: all checks passed" in out.stdout
    report = brisk.device_report()
    for g in report["gpus"]:
        assert "cuda:%d: forward pass" % g["index"] in out.stdout


def test_device_report_says_what_the_build_carries():
    r = brisk.device_report()
    assert r["cpu_isa"] in ("scalar", "avx2", "avx-vnni", "avx512-vnni")
    assert r["cpu_threads"] >= 1
    if r["built_with_cuda"]:
        assert r["cuda_archs"].split(",") == ["75", "80", "89", "90a"]
