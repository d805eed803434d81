"""Ingest redaction: secrets never reach any file under the data directory."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from commands import MemoryLog, Redactor

from ..conftest import scan_dir


def test_secrets_never_reach_disk(tmp_path: Path) -> None:
    """An email, an API key and a password in content are not in any file (raw byte scan)."""
    token = secrets.token_hex(6)
    email = f"jane.{token}@example.com"
    api_key = "sk-" + secrets.token_hex(20)
    password = f"hunter{token}"
    store = tmp_path / "store"
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        mid = mem.add_message(sid, role="user", content=f"mail {email} key {api_key} password: {password}")
        mem.record_decision(sid, decision="Rotate keys", rationale=f"leaked {api_key}")
        mem.remember("alice", "contact", f"write to {email}")
        mem.search("rotate keys")
        mem.context(sid)
        shown = mem.show(mid)
        assert shown.redactions == {"email": 1, "api_key": 1, "password": 1}
        assert "[REDACTED]" in (shown.content or "")
    needles = [email.encode(), api_key.encode(), password.encode(), token.encode()]
    assert scan_dir(store, needles) == {}


def test_redaction_can_be_switched_off(tmp_path: Path) -> None:
    """With redact_on_ingest off, content is stored as given."""
    with MemoryLog.open(tmp_path / "s", redact_on_ingest=False) as mem:
        sid = mem.start_session()
        mid = mem.add_message(sid, role="user", content="mail bob@example.com")
        assert mem.show(mid).content == "mail bob@example.com"


def test_redactor_counts_per_kind() -> None:
    """The redactor replaces spans and counts them per pattern kind, custom regexes included."""
    redactor = Redactor(["email", "password"], {"ticket": r"TICKET-\d+"})
    counts: dict[str, int] = {}
    out = redactor.redact("a@b.io and c@d.io, password=abc TICKET-42", counts)
    assert counts == {"email": 2, "password": 1, "ticket": 1}
    assert "a@b.io" not in out and "abc" not in out and "TICKET-42" not in out


@pytest.mark.parametrize(("text", "expected"), [
    ("my password is hunter2", "my [REDACTED]"),
    ("the password was set to s3cr3t!", "the [REDACTED]"),
    ("passphrase: correct horse", "[REDACTED] horse"),
    ("pw: hunter2", "[REDACTED]"),
    ("PW=hunter2, later", "[REDACTED] later"),
    ("my pw is hunter2", "my [REDACTED]"),
    ("the password for root is hunter2", "the [REDACTED]"),
    ("passwords: hunter2", "[REDACTED]"),
    ("password, hunter2", "[REDACTED]"),
    ("password -> hunter2", "[REDACTED]"),
    ("Reset the password, password: hunter2", "Reset the [REDACTED]"),
    ("pw for root is hunter2", "[REDACTED]"),
    ("the password for the admin account is hunter2", "the [REDACTED]"),
    ("password => hunter2", "[REDACTED]"),
    ("password \u2192 hunter2", "[REDACTED]"),
    ('{"password": "hunter2"}', '{"[REDACTED]'),
    ("DB_PASSWORD=hunter2", "DB[REDACTED]"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws[REDACTED]"),
    ("client secret: 0a1b2c3d", "[REDACTED]"),
])
def test_a_password_in_a_sentence_goes_with_the_words_before_it(text: str, expected: str) -> None:
    """The linking words after the keyword (is, was, set, to) are not taken for the
    secret: the secret itself is removed (the seed's pattern removed "is")."""
    counts: dict[str, int] = {}
    assert Redactor(["password"]).redact(text, counts) == expected
    assert counts == {"password": 1}


_JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
        ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")


@pytest.mark.parametrize(("kind", "text", "expected"), [
    ("api_key", f"Authorization: Bearer {_JWT} sent", "Authorization: Bearer [REDACTED] sent"),  # whole
    ("api_key", "token ab-" + "Q1" * 20 + "_x-y+z== ok", "token [REDACTED] ok"),  # around the long run
    ("api_key", "see /home/u/file.txt and the-long-hyphenated-slug-of-a-blog-post-2024",
     "see /home/u/file.txt and the-long-hyphenated-slug-of-a-blog-post-2024"),
    ("email", "write to jos\u00e9@ex\u00e4mple.pt or \u00e9mile@example.fr.",
     "write to [REDACTED] or [REDACTED]."),
    ("email", "\u8bf7\u53d1\u7ed9zhang@example.com\u8c22\u8c22", "\u8bf7\u53d1\u7ed9[REDACTED]\u8c22\u8c22"),
    ("api_key", "see hub/snapshots/" + "a1b2c3d4" * 5 + "/config.json",
     "see hub/snapshots/[REDACTED]/config.json"),
])
def test_tokens_and_emails_go_whole(kind: str, text: str, expected: str) -> None:
    """A JWT goes whole (its header alone is a standard string that gives nothing
    away); a long token goes with the token characters around it; an email may
    hold letters of any script."""
    assert Redactor([kind]).redact(text, {}) == expected


_SECRETS = st.sampled_from([
    _JWT, "client_secret=ab12", "x@ex\u00e4mple.pt",
    "sk-" + "a1B2" * 5, "ghp_" + "Z9" * 10, "AKIA" + "ABCD1234" * 2, "x" * 32 + "7", "Password: hunter2",
    "pwd=s3cr3t", "my password is x", "pw: y", "jane@example.com", "é" * 3, "tok" + "-_" * 9, "\ud800",
])


@given(st.lists(st.one_of(st.text(max_size=40), _SECRETS), max_size=8).map(" ".join))
def test_prefilters_never_change_the_result(text: str) -> None:
    """The substring pre-checks only skip regex scans that could not match."""
    redactor = Redactor(["email", "api_key", "password"])
    counts: dict[str, int] = {}
    expected = text
    for _, pattern in redactor._patterns:
        expected = pattern.sub("[REDACTED]", expected)
    assert redactor.redact(text, counts) == expected
