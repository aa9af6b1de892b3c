"""Regressions of an outside probe of `brisk serve` (each test names the probe's item):
compressed and oversized prompts refused before they cost anything (1), requests without
a length answered at once (4), /metrics bounded and uninjectable (5), a whole response that
fails after admission gets an error status (6), unimplemented fields refused by name (11),
methods, line ends and CORS (13), and a shutdown while a chat template renders (3)."""
import gzip
import json
import signal
import socket
import threading
import time

import httpx
import openai
import pytest

from conftest import Server, default_model, wait_for

CHAT = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]


def exchange(server, data, timeout=15):
    """Sends raw bytes; returns (status code, headers as a lower-cased dict, body, seconds)."""
    t = time.time()
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split(" ")[1]) if lines[0].startswith("HTTP/") else 0
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    return status, headers, body, time.time() - t


def post(path, body, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


# --- 1: compressed bodies, and prompts too long to tokenize -----------------------------

def test_compressed_bodies_are_refused_unread(server):
    """A gzip body of 1 MB of text inflates far past --max-body: a 415 at once, never inflated."""
    body = gzip.compress(json.dumps({"prompt": "a" * 1_000_000, "max_tokens": 1}).encode())
    status, _, out, secs = exchange(server, post(b"/v1/completions", body, b"Content-Encoding: gzip\r\n"))
    assert status == 415 and secs < 2, (status, out)
    assert "Content-Encoding" in json.loads(out)["error"]["message"]
    # identity is no encoding at all
    body = json.dumps({"prompt": "hi", "max_tokens": 1}).encode()
    assert exchange(server, post(b"/v1/completions", body, b"Content-Encoding: identity\r\n"))[0] == 200


@pytest.fixture(scope="module")
def roomy():
    """Gemma with a 4 MB body cap and a small context: prompts that cannot fit."""
    s = Server("--parallel", "1", "--ctx", "256", "--max-body", "4000000", model=default_model())
    yield s
    assert s.stop() == 0, "".join(s.log)


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_a_prompt_whose_bytes_cannot_fit_is_refused_before_tokenizing(roomy, endpoint):
    text = "lorem ipsum dolor sit amet " * 120_000  # 3.2 MB
    body = {"prompt": text} if endpoint == "completions" else {"messages": [{"role": "user", "content": text}]}
    r = httpx.post(f"{roomy.url}/v1/{'chat/' if endpoint == 'chat' else ''}completions", json=body, timeout=60)
    err = r.json()["error"]
    assert r.status_code == 400 and err["param"] == ("prompt" if endpoint == "completions" else "messages"), r.text
    # "at least": counted from the bytes by the bound, not by tokenizing them.
    assert "at least" in err["message"] and "context is 256 tokens" in err["message"], err


def test_a_prompt_just_over_the_context_is_counted_exactly(roomy):
    r = httpx.post(roomy.url + "/v1/completions", json={"prompt": "hello " * 300, "max_tokens": 1}, timeout=60)
    err = r.json()["error"]
    assert r.status_code == 400 and err["param"] == "prompt" and "at least" not in err["message"], r.text


# --- 4: requests without a length, and chunked bodies --------------------------------------

def test_a_post_without_content_length_is_411_at_once(server):
    status, _, out, secs = exchange(server, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 411 and secs < 1, (status, out, secs)
    assert "Content-Length" in json.loads(out)["error"]["message"]


def test_hundreds_of_posts_without_length_leave_health_fast(server):
    def one(_):
        return exchange(server, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n")[0]
    t = time.time()
    with __import__("concurrent.futures").futures.ThreadPoolExecutor(32) as pool:
        codes = list(pool.map(one, range(600)))
    assert set(codes) == {411} and time.time() - t < 30
    t = time.time()
    assert httpx.get(server.url + "/health", timeout=5).status_code == 200 and time.time() - t < 1


def test_chunked_bodies_are_read_under_the_body_cap(server):
    body = json.dumps({"prompt": "Hello", "max_tokens": 2, "temperature": 0}).encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    status, _, out, _ = exchange(server, head + chunks + b"0\r\n\r\n")
    assert status == 200 and json.loads(out)["usage"]["completion_tokens"] == 2, out
    big = b"x" * 70000  # the fixture's cap is 65,536 bytes
    status, _, out, secs = exchange(server, head + b"%x\r\n" % len(big) + big + b"\r\n0\r\n\r\n")
    assert status == 413 and secs < 2
    status, _, _, _ = exchange(server, head + b"zz\r\n")
    assert status == 400
    status, _, _, _ = exchange(server, head.replace(b"chunked", b"gzip, chunked") + b"0\r\n\r\n")
    assert status == 501


# --- 5: /metrics ------------------------------------------------------------------------

def test_metrics_label_only_known_routes_and_cannot_be_injected(server):
    http = httpx.Client()  # one kept-alive connection: a new client per request costs ~35 ms of client set-up

    def size():
        return len(http.get(server.url + "/metrics").content)
    for i in range(50):  # warm: every status the loop below makes
        http.get(f"{server.url}/warm{i}")
    before = size()
    for i in range(500):
        http.get(f"{server.url}/no/such/path/{i}")
    exchange(server, b"GET /x%0Abrisk_ready%200%0A HTTP/1.1\r\nHost: x\r\n\r\n")
    exchange(server, b'GET /a"b\\c HTTP/1.1\r\nHost: x\r\n\r\n')
    after = size()
    assert after < before + 200, (before, after)
    text = httpx.get(server.url + "/metrics").text
    assert [l for l in text.splitlines() if l.startswith("brisk_ready")] == ["brisk_ready 1"]
    endpoints = {l.split('endpoint="')[1].split('"')[0] for l in text.splitlines()
                 if l.startswith("brisk_requests_total{")}
    assert endpoints <= {"gate", "other", "/health", "/metrics", "/v1/models", "/v1/chat/completions",
                         "/v1/completions"}, endpoints
    assert server.metrics()['brisk_requests_total{endpoint="other",status="404"}'] >= 500


# --- 6: a whole response that fails after admission ---------------------------------------

@pytest.fixture()
def one_slot():
    s = Server("--parallel", "1", "--ctx", "512", model=default_model())
    yield s
    s.stop()


def test_shutdown_mid_request_is_a_503_and_the_client_raises(one_slot):
    s = one_slot
    client = s.client()
    caught = {}

    def ask():
        try:
            caught["ok"] = client.chat.completions.create(model="m", messages=CHAT, max_tokens=400,
                                                          extra_body={"ignore_eos": True})
        except openai.APIStatusError as e:
            caught["error"] = e

    t = threading.Thread(target=ask)
    t.start()
    wait_for(lambda: s.metrics().get("brisk_generated_tokens_total", 0) > 0 or
             s.metrics()["brisk_running_sequences"] == 1, 60, "the request to run")
    time.sleep(0.5)
    s.proc.send_signal(signal.SIGTERM)
    t.join(60)
    assert "ok" not in caught, "a cancelled request answered 200"
    e = caught["error"]
    assert e.status_code == 503 and "shutting down" in e.response.json()["error"]["message"]
    assert s.proc.wait(30) == 0


def test_shutdown_mid_stream_ends_it_with_an_error_event(one_slot):
    s = one_slot
    stream = s.client().chat.completions.create(model="m", messages=CHAT, max_tokens=400, stream=True,
                                                extra_body={"ignore_eos": True})
    with pytest.raises(openai.APIError) as info:
        for i, _ in enumerate(stream):
            if i == 3:
                s.proc.send_signal(signal.SIGTERM)
    assert "shutting down" in str(info.value)
    assert s.proc.wait(30) == 0


# --- 11: fields brisk does not implement -------------------------------------------------------

REFUSED = [
    ("chat", {"response_format": {"type": "yaml"}}, "response_format"),
    ("chat", {"response_format": {"type": "json_schema", "json_schema": "x"}}, "response_format"),
    ("chat", {"tool_choice": "required"}, "tool_choice"),  # without tools
    ("chat", {"tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
    ("chat", {"tool_choice": "sometimes"}, "tool_choice"),
    ("chat", {"tool_choice": {"type": "function", "function": {"name": "f"}},
              "tools": [{"type": "function", "function": {"name": "g"}}]}, "tool_choice"),
    ("chat", {"tool_choice": "required", "response_format": {"type": "json_object"},
              "tools": [{"type": "function", "function": {"name": "g"}}]}, "tool_choice"),
    ("chat", {"parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ("chat", {"chat_template_kwargs": [1]}, "chat_template_kwargs"),
    ("chat", {"logit_bias": {"forty-two": 100}}, "logit_bias"),
    ("chat", {"logit_bias": {"42": 101}}, "logit_bias"),
    ("chat", {"logit_bias": [42, 100]}, "logit_bias"),
    ("chat", {"functions": [{"name": "f"}]}, "functions"),
    ("chat", {"tools": [1, "x", None]}, "tools"),
    ("chat", {"tools": {"type": "function"}}, "tools"),
    ("chat", {"tools": [{"type": "function", "function": {}}]}, "tools"),
    ("chat", {"tools": [{"type": "retrieval"}]}, "tools"),
    ("completions", {"best_of": 2}, "best_of"),
    ("completions", {"logit_bias": {"999999999": -100}}, "logit_bias"),
    ("completions", {"logit_bias": {"42": "ban"}}, "logit_bias"),
]

ACCEPTED = [
    ("chat", {"response_format": {"type": "text"}}),
    ("chat", {"tool_choice": "none"}),
    ("chat", {"tool_choice": "auto", "parallel_tool_calls": True}),
    ("chat", {"parallel_tool_calls": False}),
    ("chat", {"chat_template_kwargs": {"enable_thinking": False}}),
    ("chat", {"logit_bias": {}}),
    ("chat", {"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                          "parameters": {"type": "object", "properties": {}}}}]}),
    ("completions", {"best_of": 1, "logit_bias": {}}),
]


def generation(server, endpoint, fields):
    base = {"messages": [{"role": "user", "content": "Hi"}]} if endpoint == "chat" else {"prompt": "Hi"}
    url = f"{server.url}/v1/{'chat/' if endpoint == 'chat' else ''}completions"
    return httpx.post(url, json={**base, "max_tokens": 2, **fields}, timeout=60)


@pytest.mark.parametrize("endpoint,fields,param", REFUSED)
def test_unimplemented_fields_are_400_naming_the_field(server, endpoint, fields, param):
    r = generation(server, endpoint, fields)
    assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text


@pytest.mark.parametrize("endpoint,fields", ACCEPTED)
def test_their_no_op_values_are_accepted(server, endpoint, fields):
    r = generation(server, endpoint, fields)
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 2, r.text


# --- 13: error answers, methods, line ends, CORS -------------------------------------------------

def test_context_overflow_names_the_prompt_on_completions(server):
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "word " * 600}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "prompt", r.text
    r = httpx.post(server.url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "word " * 600}]},
                   timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages", r.text


@pytest.mark.parametrize("method", ["HEAD", "PUT", "DELETE", "PATCH", "GET"])
def test_a_wrong_method_on_an_api_path_is_405_with_allow(server, method):
    r = httpx.request(method, server.url + "/v1/chat/completions", content=b"{}" if method != "GET" else None)
    assert r.status_code == 405 and r.headers["allow"] == "POST, OPTIONS", (r.status_code, r.headers)
    if method != "HEAD":
        assert "not allowed" in r.json()["error"]["message"]
    r = httpx.request(method, server.url + "/v1/models", content=b"{}" if method != "GET" else None)
    assert r.status_code == (200 if method in ("GET", "HEAD") else 405)
    if r.status_code == 405:
        assert r.headers["allow"] == "GET, HEAD, OPTIONS"


def test_options_is_answered_with_allow(server):
    r = httpx.options(server.url + "/v1/completions")
    assert r.status_code == 204 and r.headers["allow"] == "POST, OPTIONS"
    assert "access-control-allow-origin" not in r.headers  # CORS is off by default
    assert httpx.options(server.url + "/nowhere").status_code == 404


@pytest.mark.parametrize("line", [b"TRACE / HTTP/1.1", b"CONNECT x:443 HTTP/1.1", b"get /health HTTP/1.1",
                                  b"BREW /v1/models HTTP/1.1"])
def test_unknown_methods_are_501_at_once(server, line):
    status, _, out, secs = exchange(server, line + b"\r\nHost: x\r\n\r\n")
    assert status == 501 and secs < 1 and "method" in json.loads(out)["error"]["message"], (status, out)


def test_bare_lf_line_ends_are_accepted_at_once(server):
    status, _, out, secs = exchange(server, b"GET /health HTTP/1.1\nHost: x\n\n")
    assert status == 200 and secs < 1 and json.loads(out)["status"] == "ok"
    body = json.dumps({"prompt": "Hi", "max_tokens": 1}).encode()
    status, _, out, _ = exchange(server, b"POST /v1/completions HTTP/1.1\nContent-Length: %d\n\n" % len(body) + body)
    assert status == 200, out
    status, _, _, secs = exchange(server, b"GET /health HTTP/1.1\r\nX: a\rb\r\n\r\n")
    assert status == 400 and secs < 1  # a CR alone inside a line is still refused


def test_http_versions_other_than_1_x_are_505(server):
    assert exchange(server, b"GET /health HTTP/2.0\r\n\r\n")[0] == 505


@pytest.fixture(scope="module")
def cors():
    s = Server("--parallel", "1", "--ctx", "256", "--api-key", "k", "--cors", "https://app.example",
               model=default_model())
    yield s
    assert s.stop() == 0, "".join(s.log)


def test_cors_preflight_and_responses(cors):
    asked = "authorization, content-type, x-stainless-lang"
    r = httpx.options(cors.url + "/v1/chat/completions", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": asked})
    assert r.status_code == 204  # no API key needed: browsers send none with a preflight
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in r.headers["access-control-allow-methods"]
    assert r.headers["access-control-allow-headers"] == asked
    ok = httpx.get(cors.url + "/v1/models", headers={"Origin": "https://app.example", "Authorization": "Bearer k"})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://app.example"
    denied = httpx.get(cors.url + "/v1/models", headers={"Origin": "https://evil.example", "Authorization": "Bearer k"})
    assert denied.status_code == 200 and "access-control-allow-origin" not in denied.headers
    # Errors carry it too, so a page can read why.
    r = httpx.get(cors.url + "/v1/models", headers={"Origin": "https://app.example"})
    assert r.status_code == 401 and r.headers["access-control-allow-origin"] == "https://app.example"


# --- 3: a shutdown while a chat template renders ---------------------------------------------------

SLOW_TEMPLATE = ("{% set ns = namespace(n=0) %}{% for i in range(1000) %}{% for j in range(1000) %}"
                 "{% set ns.n = ns.n + 1 %}{% endfor %}{% endfor %}"
                 "{% for m in messages %}{{ m.content }}{% endfor %}")


def test_shutdown_completes_while_a_template_renders(tmp_path):
    path = tmp_path / "slow.jinja"
    path.write_text(SLOW_TEMPLATE)
    s = Server("--parallel", "1", "--ctx", "256", "--chat-template", str(path), model=default_model())
    try:
        t = time.time()
        r = httpx.post(s.url + "/v1/chat/completions", json={"messages": CHAT, "max_tokens": 1}, timeout=120)
        render = time.time() - t  # the whole request: mostly the render
        got = {}

        def ask():
            got["r"] = httpx.post(s.url + "/v1/chat/completions", json={"messages": CHAT, "max_tokens": 1},
                                  timeout=120)

        th = threading.Thread(target=ask)
        th.start()
        time.sleep(min(0.3, render / 4))
        t = time.time()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(60) == 0
        th.join(60)
        assert got["r"].status_code == 503, got["r"].text
        assert "shutting down" in got["r"].json()["error"]["message"]
        print(f"render {render:.2f} s (first answer {r.status_code}), shutdown {time.time() - t:.2f} s")
        assert time.time() - t < max(1.0, render / 2), (render, time.time() - t)
    finally:
        s.stop()
