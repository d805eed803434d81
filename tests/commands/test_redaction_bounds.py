"""Redaction regexes are bounded: RE2 for every pattern, clear refusals for
what would run away. Nothing here is timed: child processes get a generous
timeout only as a guard against a hang."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from commands import MemoryLog, Redactor
from commands.app.store import redaction
from commands.app.store.settings import load_settings
from eventstore import E_INVALID_PATTERN, InvalidPatternError

from .conftest import Run, head_of

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 60  # seconds; only a guard, never a measurement


def _child(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=HANG_GUARD, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_catastrophic_regex_finishes_on_100k() -> None:
    """'(a+)+$' on 100k 'a's (and on the 31 that hang a backtracking engine) ends at once."""
    out = _child(
        "from commands import Redactor\n"
        "r = Redactor([], {'custom': '(a+)+$'})\n"
        "for text in ('a' * 31 + '!', 'a' * 100_000 + '!', 'a' * 100_000):\n"
        "    c = {}; r.redact(text, c); print(c.get('custom', 0))\n")
    assert out.split() == ["0", "0", "1"]


def test_builtin_patterns_on_adversarial_mebibytes() -> None:
    """Every built-in pattern on every adversarial 1 MiB input of tools/bench/bench_redaction.py
    finishes (the figures themselves are in docs/_wt_input_notes.md)."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench" / "bench_redaction.py"), "--json",
                             "--re-timeout", "0"], capture_output=True, text=True, timeout=HANG_GUARD,
                            check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    builtin = [r for r in data["rows"] if r["pattern"] in redaction.PATTERNS]
    assert data["size"] == 1 << 20 and len(builtin) == 14 * 3
    assert {r["input"] for r in builtin} >= {"local_part_run", "at_repeated", "domain_dots", "alnum_run",
                                             "password_repeated", "password_spaces"}
    assert not any(r["refused"] for r in builtin)
    by = {(r["input"], r["pattern"]): r["matches"] for r in builtin}
    assert by["emails", "email"] > 100_000
    assert by["password_words", "password"] == 1  # keywords in a row, then the last word: one span
    assert by["local_part_run", "email"] == 0 and by["alnum_run", "api_key"] == 1
    custom = {r["pattern"]: r for r in data["rows"] if r["pattern"] not in redaction.PATTERNS}
    assert custom["many_lookahead"]["refused"] and not custom["(a+)+$"]["refused"]


def test_bench_prints_the_stdlib_anchor(tmp_path: Path) -> None:
    """On a small input the stdlib column is filled (or marked stopped)."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench" / "bench_redaction.py"), "--json",
                             "--size", "2048", "--re-timeout", "0.5"], capture_output=True, text=True,
                            timeout=HANG_GUARD, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(result.stdout)["rows"]
    assert all(r["re_s"] is not None or r["re_timed_out"] for r in rows)
    assert {"input", "pattern", "bytes", "matches", "redact_s", "scan_s", "re_s"} <= set(rows[0])


@pytest.mark.parametrize(("regex", "why"), [
    (r"(a)\1", "backreferences are not supported"),
    (r"(?P<x>a)(?P=x)", "RE2"),
    (r"(?=secret)\w+", "lookaround is not supported"),
    (r"(?<!x)y", "lookaround is not supported"),
    (r"a{2000}", "invalid repetition size"),
    (r"a[ab]{400}c", "too large"),
    (r"[", "missing ]"),
    (r"x*", "matches the empty text"),
    ("", "non-empty string"),
])
def test_unsupported_regexes_are_refused(regex: str, why: str) -> None:
    """What RE2 cannot run linearly is refused when the regex is compiled, saying why."""
    with pytest.raises(InvalidPatternError) as caught:
        Redactor([], {"custom": regex})
    assert why in caught.value.message and caught.value.code == E_INVALID_PATTERN


def test_runaway_regex_stops_at_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many matches that each look to the end of the text add up; past the limit the
    redaction stops with E_INVALID_PATTERN (limit shrunk so the test stays short)."""
    monkeypatch.setattr(redaction, "TIME_LIMIT", 0.01)
    text = "abcdefghij" * 20_000  # a few hundred seconds of RE2 searches without the limit
    redactor = Redactor([], {"custom": r"[a-z]*x|[a-z]"})
    with pytest.raises(InvalidPatternError, match="time limit"):
        redactor.redact(text, {})
    with pytest.raises(InvalidPatternError, match="time limit"):
        redactor.spans(text)


def test_python_z_lone_surrogates_and_no_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    r"""``\Z`` works as in Python, lone surrogates pass through, and RE2 prints nothing."""
    counts: dict[str, int] = {}
    redactor = Redactor(["email", "password"], {"ticket": r"TICKET-\d+\Z"})
    out = redactor.redact("x\ud800 a@b.io pwd: \u00a0hunter2 TICKET-7", counts)
    assert out == "x\ud800 [REDACTED] [REDACTED] [REDACTED]"
    assert counts == {"email": 1, "password": 1, "ticket": 1}
    with pytest.raises(InvalidPatternError):
        Redactor([], {"bad": r"(?=x)"})
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_builtin_patterns_match_as_before_on_normal_text() -> None:
    """On ordinary text the RE2 patterns find what the seed's stdlib patterns found."""
    import re

    seed = {"email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
            "password": r"(?i)\b(?:password|passwd|pwd)\b\s*[:=]?\s*\S+"}
    texts = ["Mail jane.doe+x@mail.example.com or bob@ex.io.", "PASSWORD = hunter2; pwd:abc",
             "passwd\tsecret and Password:   s3 done", "key sk-" + "a1" * 12 + " AKIA" + "B" * 16]
    for kind, pattern in seed.items():
        ours = Redactor([kind])._patterns[0][1]
        for text in texts:
            assert ours.sub("#", text) == re.sub(pattern, "#", text), (kind, text)


def test_bad_custom_setting_is_refused_before_opening(tmp_path: Path) -> None:
    """A custom regex RE2 refuses fails at load_settings and MemoryLog.open; nothing is created."""
    with pytest.raises(InvalidPatternError):
        load_settings(None, {"custom_redactions": {"bad": r"(\w)\1"}})
    with pytest.raises(InvalidPatternError):
        MemoryLog.open(tmp_path / "s", custom_redactions={"bad": r"(?!x)"})
    assert not (tmp_path / "s").exists()


def test_cli_redact_regex_refused_cleanly(run: Run, store: Path) -> None:
    """`redact --regex` with a backreference: exit 2, one Error line, nothing written."""
    code, out, _ = run("session", "start")
    sid = out["id"]
    code, out, _ = run("add", "message", sid, "--role", "user", "--content", "aa bb")
    head = head_of(store)
    code, _, err = run("redact", out["id"], "--regex", r"(a)\1", "--reason", "r", "--requested-by", "me")
    assert code == 2 and err.count("Error:") == 1 and f"[{E_INVALID_PATTERN}]" in err
    assert "Traceback" not in err and head_of(store) == head
