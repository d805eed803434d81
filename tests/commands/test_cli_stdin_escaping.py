"""Content from stdin (``-``), and output that escapes every field: the terminal
(control characters, bidi overrides), Markdown and HTML reports. JSON stays exact."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from click.testing import CliRunner

from commands.app.audit.reports import escape_controls, escape_html, escape_md, render_deletions
from commands.cli import cli

from .conftest import Run, head_of

NASTY = "a\x1b[31mred\x07\x7f\x9b\u202eevil\u2066x\u2069 | `*_[x](y)<b>&\r\nend\tz"
BIG = "word " * 40_000  # 200 KB: more than fits on a command line


@pytest.fixture
def sid(run: Run) -> str:
    code, out, err = run("session", "start", "--user", "alice")
    assert code == 0, err
    return str(out["id"])


@pytest.mark.parametrize(("args", "field"), [
    (("add", "message", "{sid}", "--role", "user", "--content", "-"), "content"),
    (("add", "lesson", "{sid}", "--content", "-"), "content"),
    (("add", "task", "{sid}", "--content", "-"), "content"),
    (("add", "handoff", "{sid}", "--content", "-"), "content"),
    (("add", "project", "{sid}", "--content", "-"), "content"),
    (("add", "decision", "{sid}", "--decision", "-"), "content"),
    (("add", "decision", "{sid}", "--decision", "d", "--rationale", "-"), "rationale"),
    (("add", "finding", "{sid}", "--description", "-"), "content"),
    (("add", "finding", "{sid}", "--description", "f", "--evidence", "-"), "evidence"),
    (("add", "finding", "{sid}", "--description", "f", "--recommendation", "-"), "recommendation"),
    (("add", "preference", "--user", "alice", "--key", "k", "--value", "-"), "value"),
    (("remember", "--user", "alice", "notes", "-"), "content"),
])
def test_each_content_option_reads_stdin(run: Run, sid: str, args: tuple[str, ...], field: str) -> None:
    """`-` reads the value from stdin (200 KB, beyond argv's limits); one trailing newline goes."""
    code, out, err = run(*(a.format(sid=sid) for a in args), stdin=BIG + "\n")
    assert code == 0, err
    code, shown, _ = run("show", out["id"])
    value = shown["content"] if field == "content" else shown["details"][field]
    assert value.endswith(BIG) and not value.endswith("\n")


def test_two_options_from_stdin_are_refused(run: Run, store: Path, sid: str) -> None:
    """At most one option per command reads stdin."""
    head = head_of(store)
    code, _, err = run("add", "decision", sid, "--decision", "-", "--rationale", "-", stdin="x")
    assert code == 2 and "only one option can read stdin" in err and err.count("Error:") == 1
    code, _, err = run("add", "finding", sid, "--description", "-", "--evidence", "-",
                       "--recommendation", "-", stdin="x")
    assert code == 2 and head_of(store) == head


def test_stdin_must_be_utf8_and_not_empty(run: Run, store: Path, sid: str) -> None:
    """Bad bytes or an empty stdin are refused cleanly."""
    head = head_of(store)
    result = CliRunner().invoke(cli, ["--dir", str(store), "add", "lesson", sid, "--content", "-"],
                                input=b"ok \xff bad")
    assert result.exit_code == 2 and "not valid UTF-8 [E_SCHEMA_INVALID]" in result.stderr
    code, _, err = run("add", "lesson", sid, "--content", "-", stdin="")
    assert code == 2 and "must not be empty" in err and head_of(store) == head
    for option in ("--rationale", "--evidence", "--recommendation"):  # optional fields too
        kind, first = ("decision", "--decision") if option == "--rationale" else ("finding", "--description")
        code, _, err = run("add", kind, sid, first, "x", option, "-", stdin="\n")
        assert code == 2 and f"{option} from stdin must not be empty" in err and head_of(store) == head


def test_terminal_output_escapes_controls(run: Run, sid: str) -> None:
    """Human output shows control characters and bidi overrides escaped in every field; JSON is exact."""
    code, out, err = run("add", "message", sid, "--role", "user", "--content", NASTY, "--topic",
                         "t\x1bopic", "--tag", "ta\u202eg")
    assert code == 0, err
    mid = out["id"]
    run("remember", "--user", "alice", "k", NASTY)
    outputs = [run(*args, as_json=False)[1] for args in (
        ("show", mid), ("search", "red"), ("memories", "--user", "alice"), ("context", sid),
        ("audit", "history", mid), ("session", "show", sid), ("audit", "at", "@99999999", "entry", mid))]
    for text in outputs[:6]:
        assert not any(c in text for c in "\x1b\x07\x7f\x9b\u202e\u2066\u2069\r"), repr(text)
    assert "\\x1b[31mred" in outputs[0] and "\\u202e" in outputs[0] and "t\\x1bopic" in outputs[0]
    assert "ta\\u202eg" in outputs[0]
    code, shown, _ = run("show", mid)
    assert shown["content"] == NASTY and shown["tags"] == ["ta\u202eg"]


def test_error_lines_escape_controls(run: Run, sid: str) -> None:
    """An error that quotes a bad value stays one line, with controls escaped."""
    code, _, err = run("add", "message", sid, "--role", "us\ner\x1b", "--content", "x")
    assert code == 2 and err.count("\n") == 1 and "\x1b" not in err


def test_markdown_and_html_escape_every_field() -> None:
    """Markdown escapes punctuation and newlines; HTML escapes & < > \" '; both escape controls."""
    row = {"request_id": "del-1|x", "requested_by": "a_b*", "reason": NASTY, "criteria": {"ids": ["<i>"]},
           "requested_at": "2026-01-01T00:00:00Z", "requested_seq": 1, "counts_by_kind": {"message": 1},
           "entry_ids": ["msg-`1`"], "erased_seqs": [3], "deleted_at": None, "purged_at": None,
           "purge_verified": None, "files_rewritten": [], "status": "requested"}
    md = render_deletions([row], "md")
    body = md.splitlines()[-1]
    assert body.count(" | ") == 8 and "\n" not in body.strip()
    for raw in ("`1`", "<b>", "[x]", "a_b*", "del-1|x", "\x1b", "\u202e", "\r"):
        assert raw not in md
    assert r"del-1\|x" in md and r"a\_b\*" in md and r"msg-\`1\`" in md
    page = render_deletions([row], "html")
    for raw in ("<b>", "<i>", "\x1b", "\u202e", "'<i>'"):
        assert raw not in page
    assert "&lt;b&gt;" in page and "&#x27;&lt;i&gt;&#x27;" in page
    text = render_deletions([row], "text")
    assert "\x1b" not in text and "\\x1b" in text


def test_escape_helpers() -> None:
    """The helpers themselves: what they keep and what they escape."""
    assert escape_controls("a\nb\tc\x00\x85\u2067") == "a\\x0ab\\x09c\\x00\\x85\\u2067"
    assert escape_controls("a\nb\tc\x00", keep="\n\t") == "a\nb\tc\\x00"
    assert escape_controls("plain é ü") == "plain é ü"
    assert escape_md("a\nb|c\\") == "a b\\|c\\\\"
    assert escape_html("<'\"&>") == html.escape("<'\"&>", quote=True)
