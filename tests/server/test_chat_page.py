"""The chat page at / in a real browser: headless Chromium (Debian's, through selenium and
chromedriver) against `brisk serve` on the default model. It loads, sends a message and sees
the streamed answer appear, stops a long answer, keeps the conversation across a reload,
renders markdown with code blocks but never the HTML a message carries, and asks for the API
key when the server has one. A screenshot of the conversation is left in build/ as an artifact.
"""
import json
import shutil
import time
from pathlib import Path

import pytest

from conftest import ROOT, SANITIZED, Server, default_model

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 600 if SANITIZED else 120


@pytest.fixture(scope="module")
def browser():
    if not shutil.which("chromium") or not shutil.which("chromedriver"):
        pytest.fail("scripts/setup installs chromium and chromium-driver for this test")
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1100,800"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")), options=opts)
    yield d
    d.quit()


@pytest.fixture(scope="module")
def page_server():
    s = Server("--parallel", "2", "--ctx", "2048", model=default_model())
    yield s
    assert s.stop() == 0, "".join(s.log)


def messages(d):
    return [(e.get_attribute("class").split()[1], e.find_element(By.CLASS_NAME, "content").text)
            for e in d.find_elements(By.CSS_SELECTOR, "#messages .msg")]


def settle(d):
    """Waits until no answer is streaming (the Send button is back)."""
    WebDriverWait(d, WAIT).until(lambda d: d.find_element(By.ID, "send").is_displayed())


def send(d, text):
    box = d.find_element(By.ID, "input")
    box.clear()
    box.send_keys(text)
    d.find_element(By.ID, "send").click()


def set_field(d, field, value):
    d.execute_script("document.getElementById(arguments[0]).value = arguments[1];"
                     "document.getElementById(arguments[0]).dispatchEvent(new Event('change'))", field, str(value))


def test_conversation_streams_stops_and_survives_a_reload(browser, page_server):
    d = browser
    d.get(page_server.url + "/")
    d.execute_script("localStorage.clear()")
    d.get(page_server.url + "/")
    WebDriverWait(d, 30).until(lambda d: d.find_element(By.ID, "model").text not in ("", "…"))
    set_field(d, "temperature", 0)
    set_field(d, "max-tokens", 48)
    send(d, "Say hello in one short sentence.")
    # Streaming: the assistant bubble grows while the Stop button shows.
    WebDriverWait(d, WAIT).until(lambda d: len(messages(d)) == 2 and messages(d)[1][1].strip())
    settle(d)
    first = messages(d)
    assert first[0] == ("user", "Say hello in one short sentence.") and first[1][0] == "assistant" and first[1][1]
    # A long answer, stopped while it streams.
    set_field(d, "max-tokens", 3000)
    send(d, "Count from 1 to 500, one number per line.")
    WebDriverWait(d, WAIT).until(lambda d: len(messages(d)) == 4 and len(messages(d)[3][1]) > 20)
    assert d.find_element(By.ID, "stop").is_displayed()
    d.find_element(By.ID, "stop").click()
    settle(d)
    stopped = messages(d)[3][1]
    assert "(stopped)" in stopped
    time.sleep(1)
    assert messages(d)[3][1] == stopped, "the answer kept growing after Stop"
    d.save_screenshot(str(ROOT / "build" / "chat-page.png"))
    # The conversation is in localStorage: a reload shows it again.
    before = messages(d)
    d.refresh()
    WebDriverWait(d, 30).until(lambda d: len(messages(d)) == len(before))
    assert messages(d) == before
    saved = json.loads(d.execute_script("return localStorage.getItem('brisk-chat')"))
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant", "user", "assistant"]
    assert saved["messages"][3].get("stopped") is True


def test_markdown_renders_and_html_is_escaped(browser, page_server):
    d = browser
    d.get(page_server.url + "/")
    hostile = ("**bold** and `code`\n\n```python\nprint('hi')\n```\n\n<img src=x onerror=\"window.pwned=1\">"
               "<script>window.pwned=2</script> [link](javascript:window.pwned=3)")
    d.execute_script("localStorage.setItem('brisk-chat', JSON.stringify({messages: ["
                     "{role: 'user', content: arguments[0]}, {role: 'assistant', content: arguments[0]}]}))", hostile)
    d.refresh()
    WebDriverWait(d, 30).until(lambda d: len(messages(d)) == 2)
    answer = d.find_elements(By.CSS_SELECTOR, "#messages .msg")[1]
    if d.execute_script("return !!window.marked"):
        assert answer.find_element(By.TAG_NAME, "strong").text == "bold"
        assert "print" in answer.find_element(By.CSS_SELECTOR, "pre code").text
        assert answer.find_elements(By.CSS_SELECTOR, "pre .copy"), "code blocks get a copy button"
    assert not d.find_elements(By.CSS_SELECTOR, "#messages img, #messages script, #messages a[href^='javascript']")
    assert d.execute_script("return window.pwned === undefined")
    assert "<img src=x" in answer.text  # shown as text


def test_the_page_asks_for_the_api_key(browser):
    s = Server("--parallel", "1", "--ctx", "512", "--api-key", "sesame", model=default_model())
    try:
        d = browser
        d.get(s.url + "/")  # the page itself needs no key
        d.execute_script("localStorage.clear()")
        d.refresh()
        set_field(d, "max-tokens", 8)
        send(d, "Hi")
        WebDriverWait(d, WAIT).until(lambda d: _alert(d))
        alert = d.switch_to.alert
        alert.send_keys("sesame")
        alert.accept()
        settle(d)
        roles = [r for r, _ in messages(d)]
        assert roles == ["user", "assistant"], messages(d)
        assert d.execute_script("return localStorage.getItem('brisk-chat-key')") == "sesame"
    finally:
        assert s.stop() == 0


def _alert(d):
    try:
        d.switch_to.alert
        return True
    except Exception:
        return False


def test_page_files_are_served_with_their_types(page_server):
    import httpx
    r = httpx.get(page_server.url + "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert httpx.get(page_server.url + "/static/chat.js").headers["content-type"].startswith("text/javascript")
    assert httpx.get(page_server.url + "/static/chat.css").headers["content-type"].startswith("text/css")
    assert httpx.get(page_server.url + "/static/nothing.js").status_code == 404
    assert httpx.get(page_server.url + "/static/../CMakeLists.txt").status_code == 404
