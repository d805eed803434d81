"""Ingest redaction covers every field a user can write: session metadata
(keys and values), tags, channel, topic, category, keys, alternatives and
reasons. A byte scan of the whole data directory finds none of the emails."""

from __future__ import annotations

import secrets
from pathlib import Path

from commands import MemoryLog

from ..conftest import scan_dir
from .conftest import Run

TOKEN = secrets.token_hex(5)


def email(field: str) -> str:
    """A unique email for one field (its local part names the field)."""
    return f"{field}.{TOKEN}@example.com"


def _cli_fields(run: Run) -> list[str]:
    """Write every field through the CLI; returns the emails used."""
    used: list[str] = []

    def e(field: str) -> str:
        used.append(email(field))
        return used[-1]

    code, out, err = run("session", "start", "--user", "alice", "--meta", f"owner={e('meta-value')}",
                         "--meta", f"{e('meta-key')}=yes", "--tag", f"tag {e('session-tag')}",
                         "--channel", f"chan {e('channel')}")
    assert code == 0, err
    sid = out["id"]
    writes = [
        ("add", "message", sid, "--role", "user", "--content", "hi", "--topic", f"t {e('topic')}",
         "--tag", e("message-tag")),
        ("add", "decision", sid, "--decision", "use pg", "--rationale", f"ask {e('rationale')}",
         "--alternative", f"mail {e('alternative')}", "--tag", e("decision-tag")),
        ("add", "finding", sid, "--description", "slow", "--category", f"c {e('category')}",
         "--evidence", e("evidence"), "--recommendation", e("recommendation"), "--tag", e("finding-tag")),
        ("add", "lesson", sid, "--content", "learned", "--tag", e("lesson-tag")),
        ("add", "task", sid, "--content", "todo", "--tag", e("task-tag")),
        ("add", "handoff", sid, "--content", "next", "--tag", e("handoff-tag")),
        ("add", "preference", "--user", "alice", "--key", f"k {e('pref-key')}", "--value", "v",
         "--category", f"c {e('pref-category')}"),
        ("remember", "--user", "alice", "contact", f"write {e('memory')}"),
    ]
    for args in writes:
        code, out, err = run(*args)
        assert code == 0, (args, err)
    return used


def test_no_email_in_any_cli_field_reaches_disk(run: Run, store: Path) -> None:
    """Every field given through the CLI is redacted before it is written."""
    used = _cli_fields(run)
    code, out, _ = run("search", "learned next todo")
    assert code == 0
    code, out, _ = run("session", "list", "--user", "alice")
    assert code == 0 and "[REDACTED]" in out[0]["metadata"] and out[0]["metadata"]["owner"] == "[REDACTED]"
    assert out[0]["tags"] == ["tag [REDACTED]"] and out[0]["channel"] == "chan [REDACTED]"
    assert len(used) == 19
    assert scan_dir(store, [u.encode() for u in used] + [TOKEN.encode()]) == {}


def test_deletion_reason_is_redacted(run: Run, store: Path) -> None:
    """A deletion's reason goes to the log and the ledger redacted."""
    code, out, _ = run("session", "start")
    code, out, _ = run("add", "lesson", out["id"], "--content", "to delete")
    code, _, err = run("delete", "--id", out["id"], "--reason", f"asked by {email('reason')}",
                       "--requested-by", "ops", "--yes")
    assert code == 0, err
    code, out, _ = run("audit", "deletions")
    assert out["deletions"][0]["reason"] == "asked by [REDACTED]"
    assert scan_dir(store, [email("reason").encode()]) == {}


def test_every_entry_text_is_redacted_in_the_library(tmp_path: Path) -> None:
    """EntryFactory.build maps every text of an entry through the redactor: content,
    tags, topic, rationale, alternatives, category, evidence, recommendation,
    preference key, value and category; a session's tags, channel, metadata and
    archive reason too."""
    root = tmp_path / "s"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(tags=[email("lib-tag")], channel=email("lib-channel"),
                                metadata={email("lib-key"): email("lib-value"), "a": "b"})
        ids = [
            mem.add_message(sid, role="user", content=email("lib-content"), topic=email("lib-topic"),
                            tags=[email("lib-msg-tag")]),
            mem.record_decision(sid, decision="d", rationale=email("lib-rationale"),
                                alternatives=[email("lib-alt")]),
            mem.record_finding(sid, description="f", category=email("lib-category"),
                               evidence=email("lib-evidence"), recommendation=email("lib-rec")),
            mem.set_preference("bob", key=email("lib-pref-key"), value=email("lib-pref-value"),
                               category=email("lib-pref-cat")),
        ]
        counts = [mem.show(i).redactions for i in ids]
        mem.archive_session(sid, reason=f"closed for {email('lib-archive')}")
        session = mem.sessions(archived=True)[0]
    assert counts == [{"email": 3}, {"email": 2}, {"email": 3}, {"email": 5}]  # content = "key: value"
    assert session.metadata == {"[REDACTED]": "[REDACTED]", "a": "b"}
    assert session.tags == ("[REDACTED]",) and session.channel == "[REDACTED]"
    assert scan_dir(root, [TOKEN.encode()]) == {}


def test_keys_that_redact_alike_are_both_kept(tmp_path: Path) -> None:
    """Two metadata keys that become the same after redaction keep both values."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session(metadata={email("k1"): "one", email("k2"): "two"})
        meta = mem.session(sid).metadata
    assert sorted(meta.values()) == ["one", "two"] and "[REDACTED]" in meta


def test_session_fields_kept_when_redaction_is_off(tmp_path: Path) -> None:
    """With redact_on_ingest off, session fields are stored as given."""
    with MemoryLog.open(tmp_path / "s", redact_on_ingest=False) as mem:
        sid = mem.start_session(tags=["bob@example.com"], metadata={"m": "bob@example.com"})
        assert mem.session(sid).metadata == {"m": "bob@example.com"}
