"""What a hostile or broken client tries, on loopback, bounded in count and time: slow-loris
clients and thousands of idle connections, oversize
headers, request lines and bodies, invalid UTF-8, numeric fields at their extremes, deeply
nested JSON, requests abandoned while queued, while their prompt is prefilled and while they
decode, and a burst larger than the queue. Throughout, /health answers, every request gets
an answer or a clear error (never a 500 or a hang), and the server ends idle."""
import concurrent.futures as cf
import json
import os
import socket
import time

import httpx
import pytest

from conftest import Server, default_model, wait_for


@pytest.fixture(scope="module")
def small(tiny_model):
    s = Server("--parallel", "1", "--queue", "2", "--ctx", "256", "--prefill-chunk", "8", "--max-body", "65536",
               model=tiny_model)
    yield s
    assert s.stop() == 0, "".join(s.log)


@pytest.fixture(scope="module")
def slow():
    """The real model on the CPU: slow enough (tens of tokens a second) to hold a slot."""
    s = Server("--parallel", "1", "--queue", "2", "--ctx", "512", "--prefill-chunk", "8", model=default_model())
    yield s
    assert s.stop() == 0, "".join(s.log)


def raw(server, data, timeout=10, half_close=False):
    """Sends raw bytes; returns the status line and body (or '' when the server hung up)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as s:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        out = b""
        try:
            while b"\r\n\r\n" not in out or len(out) < out.find(b"\r\n\r\n") + 4 + content_length(out):
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    head, _, body = out.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(errors="replace"), body


def content_length(out):
    for line in out.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def healthy(server):
    return httpx.get(server.url + "/health", timeout=2).status_code == 200


def completion(server, **body):
    return httpx.post(server.url + "/v1/completions", json={"prompt": "hello", "max_tokens": 2, **body}, timeout=60)


def test_oversize_headers_request_lines_and_bodies(small):
    status, body = raw(small, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
    assert status.startswith("HTTP/1.1 431") and json.loads(body)["error"]["message"]
    status, body = raw(small, b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.startswith("HTTP/1.1 414") and json.loads(body)["error"]["type"] == "invalid_request_error"
    r = completion(small, prompt="x" * 100000)
    assert r.status_code == 413
    # A client that claims a huge body and hangs up gets a 413 or a closed connection, at once.
    t = time.time()
    status, _ = raw(small, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n{}",
                    half_close=True)
    assert (status == "" or status.startswith("HTTP/1.1 413")) and time.time() - t < 5
    assert healthy(small)


def test_invalid_utf8_and_broken_requests(small):
    body = b'{"prompt": "abc\xff\xfe\xc0", "max_tokens": 2}'
    status, out = raw(small, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert status.startswith("HTTP/1.1 400")
    err = json.loads(out.decode("utf-8"))["error"]  # the answer itself is valid UTF-8
    assert "JSON" in err["message"]
    for bad in [b"", b"null", b"[]", b'"text"', b"{", b'{"prompt": "\\ud800"}', b"\x00" * 100]:
        r = httpx.post(small.url + "/v1/completions", content=bad, timeout=10)
        assert r.status_code == 400, (bad, r.text)
    status, _ = raw(small, b"NONSENSE\r\n\r\n")
    assert status == "" or status.startswith("HTTP/1.1 4")
    assert healthy(small)


EXTREMES = [-1, 0, 2 ** 31, 2 ** 63, 2 ** 64, -2 ** 63 - 1, 1e308, -1e308, "NaN", "Infinity", "1", None, True, [], {}]


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p",
                                   "seed", "n", "presence_penalty", "frequency_penalty", "logprobs", "stop"])
def test_numeric_fields_at_their_extremes(small, field):
    for value in EXTREMES:
        r = completion(small, **{field: value})
        assert r.status_code in (200, 400), (field, value, r.status_code, r.text)
        if r.status_code == 400:
            assert r.json()["error"]["param"] in (field, None), r.text
        else:
            assert r.json()["choices"][0]["finish_reason"] in ("stop", "length")


def test_deeply_nested_json(small):
    for body in [b"[" * 60000, b'{"a":' * 12000, b'{"prompt": "x", "stop": ' + b"[" * 70 + b"]" * 70 + b"}"]:
        t = time.time()
        r = httpx.post(small.url + "/v1/completions", content=body, timeout=30)
        assert r.status_code == 400 and time.time() - t < 5
    assert healthy(small)


def stream_lines(server, body):
    client = httpx.Client(timeout=60)
    ctx = client.stream("POST", server.url + "/v1/completions", json={**body, "stream": True})
    response = ctx.__enter__()
    return client, ctx, response


def test_requests_abandoned_queued_prefilling_and_decoding(slow):
    small = slow
    cancelled = 'brisk_generations_total{finish_reason="cancelled"}'
    base = small.metrics().get(cancelled, 0)
    # One slot: a long request holds it, so the next one waits in the queue.
    holder = stream_lines(small, {"prompt": "hold", "max_tokens": 150, "temperature": 0, "ignore_eos": True})
    wait_for(lambda: small.metrics()["brisk_running_sequences"] == 1, 30, "the holder to run")
    queued = stream_lines(small, {"prompt": "queued", "max_tokens": 5})
    wait_for(lambda: small.metrics()["brisk_queue_depth"] == 1, 30, "the queued request")
    queued[1].__exit__(None, None, None)  # the client gives up while waiting
    queued[0].close()
    wait_for(lambda: small.metrics().get(cancelled, 0) == base + 1, 30, "the queued cancellation")
    assert small.metrics()["brisk_queue_depth"] == 0
    lines = [l for l in holder[2].iter_lines() if l.startswith("data: ")]
    assert lines[-1] == "data: [DONE]" and len(lines) > 100
    holder[1].__exit__(None, None, None)
    holder[0].close()
    # A long prompt prefilled 8 tokens a step: leave during the prefill.
    long = stream_lines(small, {"prompt": " ".join(["word"] * 300), "max_tokens": 5})
    time.sleep(0.05)
    long[1].__exit__(None, None, None)
    long[0].close()
    wait_for(lambda: small.metrics().get(cancelled, 0) == base + 2, 30, "the prefill cancellation")
    # And leave while decoding.
    dec = stream_lines(small, {"prompt": "go", "max_tokens": 400, "ignore_eos": True})
    for i, _ in enumerate(dec[2].iter_lines()):
        if i > 6:
            break
    dec[1].__exit__(None, None, None)
    dec[0].close()
    wait_for(lambda: small.metrics().get(cancelled, 0) == base + 3, 30, "the decode cancellation")
    wait_for(lambda: small.metrics()["brisk_kv_slots_used"] == 0, 30, "the slot to be free")
    assert completion(small).status_code == 200


def test_a_burst_larger_than_the_queue(slow):
    small = slow
    health_ok = []
    def burst(i):
        return completion(small, prompt=f"burst {i}", max_tokens=20, ignore_eos=True)
    with cf.ThreadPoolExecutor(12) as pool:
        futures = [pool.submit(burst, i) for i in range(12)]
        while not all(f.done() for f in futures):
            health_ok.append(healthy(small))
            time.sleep(0.1)
        results = [f.result() for f in futures]
    codes = sorted(r.status_code for r in results)
    assert set(codes) <= {200, 503} and 503 in codes and 200 in codes, codes
    for r in results:
        if r.status_code == 503:
            assert r.headers["retry-after"] and r.json()["error"]["type"] == "overloaded_error"
        else:
            assert r.json()["usage"]["completion_tokens"] == 20
    assert health_ok and all(health_ok)
    wait_for(lambda: small.metrics()["brisk_kv_slots_used"] == 0, 30, "idle")


def test_slow_loris_and_thousands_of_idle_connections(tiny_model):
    """2,000 connections that send nothing and 50 that trickle their headers a byte at a time
    cost the server no thread: /health and a completion answer at once throughout; the slow
    ones get a 408 at the request deadline, the idle ones are closed, memory goes back."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2200
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    idle_count = min(2000, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 150)
    assert idle_count >= 1000, "this test needs a descriptor limit of at least 1,150"
    s = Server("--parallel", "1", "--ctx", "256", "--request-timeout", "3", model=tiny_model)
    try:
        rss_idle = s.rss_kib()
        idle = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(idle_count)]
        loris = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(50)]
        request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
        stop_at = time.time() + 2.5
        sent = 0
        latencies = []
        while time.time() < stop_at:  # one byte per slow connection every 0.1 s, checking health
            for c in loris:
                c.send(request[sent:sent + 1])
            sent += 1
            t = time.time()
            assert httpx.get(s.url + "/health", timeout=5).status_code == 200
            latencies.append(time.time() - t)
            time.sleep(0.1)
        assert max(latencies) < 1.0, latencies
        r = completion(s)
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 2
        # Past the 3 s deadline the slow clients are told why and every idle one is closed.
        answers = []
        for c in loris:
            c.settimeout(5)
            answers.append(c.recv(4096))
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers[0]
        assert b"did not arrive" in answers[0]
        closed = 0
        for c in idle:
            c.settimeout(5)
            try:
                closed += c.recv(1) == b""
            except ConnectionResetError:
                closed += 1
        assert closed == len(idle)
        for c in idle + loris:
            c.close()
        assert s.metrics()['brisk_requests_total{endpoint="gate",status="408"}'] >= 50
        assert healthy(s)
        if os.environ.get("BRISK_SANITIZED") != "1":  # ASan holds freed memory
            assert s.rss_kib() < rss_idle + 20 * 1024, (rss_idle, s.rss_kib())
    finally:
        assert s.stop() == 0, "".join(s.log)
