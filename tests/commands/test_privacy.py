"""Forgetting for real: after a deletion is purged, no byte of the content is anywhere."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from click.testing import CliRunner

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from commands.cli import cli
from projections.search.terms import stem_all

ENTRIES = 10_000


def marker() -> str:
    """A unique token that the tokenizer keeps whole."""
    return "zq" + secrets.token_hex(10)


class Store:
    """A 10k-entry store with marked entries to delete in four ways."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.m: dict[str, str] = {name: marker() for name in
                                  ("id", "derived", "session", "user_msg", "user_mem", "user_pref",
                                   "retention", "redact", "keep")}
        with MemoryLog.open(root, redact_on_ingest=False) as mem:
            with mem.batch():
                self.filler = mem.start_session(user_id="filler")
                for i in range(ENTRIES):
                    mem.add_message(self.filler, role="user", content=f"routine note {i} about caches")
            self.s1 = mem.start_session(user_id="alice")
            self.by_id = mem.record_decision(self.s1, decision=f"use {self.m['id']} for the ledger")
            self.derived = mem.record_summary(self.s1, content=f"summary {self.m['derived']}",
                                              derived_from=[self.by_id])
            self.kept = mem.add_message(self.s1, role="user", content=f"keep {self.m['keep']} please")
            self.redacted = mem.add_message(self.s1, role="user",
                                            content=f"mail {self.m['redact']}@example.com now")
            self.s2 = mem.start_session(user_id="alice", metadata={"note": f"meta {self.m['session']}"})
            mem.add_message(self.s2, role="user", content=f"session secret {self.m['session']}")
            self.s3 = mem.start_session(user_id="carol")
            mem.add_message(self.s3, role="user", content=f"carol says {self.m['user_msg']}")
            mem.remember("carol", "secret_word", f"remember {self.m['user_mem']}")
            mem.set_preference("carol", key="style", value=f"pref {self.m['user_pref']}")
            mem.add_message(self.s1, role="user", content=f"ancient {self.m['retention']}",
                            occurred_at="2020-01-01T00:00:00Z")

    def needles(self, *names: str) -> list[bytes]:
        """The markers as UTF-8 bytes."""
        return [self.m[n].encode() for n in (names or self.m)]

    def found(self, *names: str) -> set[bytes]:
        """Markers a raw scan of every file under the store finds."""
        hits: set[bytes] = set()
        for needle in self.needles(*names):
            if scan_tree(self.root, [needle])[0]:
                hits.add(needle)
        return hits


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Built once; the tests below run in order on it."""
    return Store(tmp_path_factory.mktemp("privacy") / "store")


@pytest.fixture(autouse=True, scope="module")
def captured_logs() -> Iterator[list[dict[str, Any]]]:
    """Every structured log line emitted during the module."""
    with structlog.testing.capture_logs() as logs:
        yield logs


OUTPUTS: list[str] = []


def cli_run(store: Store, *args: str) -> Any:
    """Run the CLI with --json; keep stdout and stderr for the leak check."""
    result = CliRunner().invoke(cli, ["--dir", str(store.root), "--json", *args])
    OUTPUTS.extend([result.stdout, result.stderr])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def test_positive_control_finds_every_marker(store: Store) -> None:
    """Before any deletion the raw scan finds every marker."""
    assert store.found() == set(store.needles())


def holding(mem: MemoryLog, needle: str) -> list[str]:
    """The ids a search for ``needle`` finds by its words (text mode) and the
    hybrid results whose content holds it. A hybrid search also returns
    semantic neighbours of a word found nowhere, so "nothing found" is asked
    of the text mode, and "nothing holds it" of the default mode."""
    hits = [h.id for h in mem.search(needle, record_access=False, mode="text")]
    return hits + [h.id for h in mem.search(needle, record_access=False) if needle in (h.content or "")]


def test_tombstone_without_purge_leaves_bytes(store: Store) -> None:
    """Negative control: a deferred deletion (tombstone only) leaves the markers on disk."""
    report = cli_run(store, "delete", "--id", store.by_id, "--reason", "erasure request",
                     "--requested-by", "dpo", "--defer", "--yes")
    assert report["purged"] is False and report["deleted"] == 2  # with its derived summary
    assert store.found("id", "derived") == set(store.needles("id", "derived"))
    with MemoryLog.open(store.root) as mem:
        assert mem.show(store.by_id).state == "deleted"
        assert not holding(mem, store.m["id"])


def test_purge_removes_them(store: Store) -> None:
    """memlog purge runs the pending purge; the markers are gone from every file."""
    report = cli_run(store, "purge")
    assert report["purged"] is True
    assert store.found("id", "derived") == set()


def test_delete_by_session_user_and_retention(store: Store) -> None:
    """Deletion by session, by user and by retention leaves no marker anywhere."""
    cli_run(store, "delete", "--session", store.s2, "--reason", "session erasure",
            "--requested-by", "dpo", "--yes")
    cli_run(store, "delete", "--user", "carol", "--reason", "right to be forgotten",
            "--requested-by", "carol", "--yes")
    plan = cli_run(store, "retention", "--as-of", "2026-01-01T00:00:00Z", "--dry-run")
    assert plan["dry_run"] is True and plan["due"] == 1 and sum(plan["counts_by_kind"].values()) == 1
    refused = CliRunner().invoke(cli, ["--dir", str(store.root), "retention", "--as-of",
                                       "2026-01-01T00:00:00Z"])
    assert refused.exit_code == 2 and "without --yes" in refused.stderr  # stdin is not a terminal
    assert store.found("retention") == set(store.needles("retention"))  # neither wrote anything
    report = cli_run(store, "retention", "--as-of", "2026-01-01T00:00:00Z", "--yes")
    assert report["deleted"] == 1 and report["verified"] is True
    gone = ("id", "derived", "session", "user_msg", "user_mem", "user_pref", "retention")
    assert store.found(*gone) == set()
    assert store.found("keep") == set(store.needles("keep"))


def test_redaction_removes_the_span(store: Store) -> None:
    """A redacted email leaves no byte behind; history keeps only the pattern kind."""
    report = cli_run(store, "redact", store.redacted, "--pattern", "email", "--reason", "pii",
                     "--requested-by", "dpo")
    assert report["verified"] is True
    assert store.found("redact") == set()
    shown = cli_run(store, "show", store.redacted)
    assert shown["state"] == "redacted" and "[REDACTED]" in shown["content"]
    assert shown["redacted"]["spans"] == {"email": 1}


def test_index_has_no_term_or_doc(store: Store) -> None:
    """The Tantivy shards hold no term, doc_freq or document for a deleted marker."""
    with MemoryLog.open(store.root) as mem:
        mem.search("routine", record_access=False)  # catch up
        index = mem.proj.search_index
        assert index is not None
        for name in ("id", "derived", "session", "user_msg", "user_pref", "retention", "redact"):
            assert index.doc_freq(store.m[name]) == 0
            for _, searcher in index.searchers():
                # the index holds stems: "…e88e" is indexed as "…e88"
                assert searcher.terms_with_prefix("content", stem_all([store.m[name]])[0]) == []
        assert index.doc_freq(store.m["keep"]) == 1


def test_nothing_leaks_through_reads(store: Store) -> None:
    """search, show, context and memories never return deleted content; show says deleted."""
    with MemoryLog.open(store.root) as mem:
        for name in ("id", "derived", "session", "user_msg", "user_mem", "user_pref", "retention"):
            assert holding(mem, store.m[name]) == []
        shown = mem.show(store.by_id)
        assert shown.state == "deleted" and shown.content is None
        assert shown.deleted is not None and shown.deleted["reason"] == "erasure request"
        assert shown.deleted["request_id"].startswith("del-")
        text = mem.context(store.s1, query="ledger").text
        assert store.m["id"] not in text and store.m["derived"] not in text
        assert mem.memories("carol") == []
        assert mem.verify().ok


def test_replay_does_not_bring_it_back(store: Store) -> None:
    """A full replay after the deletions restores no deleted content."""
    cli_run(store, "replay")
    gone = ("id", "derived", "session", "user_msg", "user_mem", "user_pref", "retention", "redact")
    assert store.found(*gone) == set()
    with MemoryLog.open(store.root) as mem:
        assert mem.show(store.by_id).state == "deleted"
        assert holding(mem, store.m["id"]) == []
        assert holding(mem, store.m["keep"])


def test_audit_report_holds_no_content(store: Store) -> None:
    """The deletion report lists every request, verified, and no marker in any format."""
    for fmt in ("text", "md", "json", "html"):
        result = CliRunner().invoke(cli, ["--dir", str(store.root), "audit", "deletions",
                                          "--format", fmt])
        assert result.exit_code == 0
        OUTPUTS.append(result.stdout)
        assert "erasure request" in result.stdout and "right to be forgotten" in result.stdout
    rows = json.loads(CliRunner().invoke(cli, ["--dir", str(store.root), "audit", "deletions",
                                               "--format", "json"]).stdout)["deletions"]
    assert len(rows) == 4 and all(r["purge_verified"] for r in rows)  # redactions are not deletions


def test_outputs_and_logs_hold_no_marker(store: Store, captured_logs: list[dict[str, Any]]) -> None:
    """Nothing printed by the CLI nor logged by memlog during the module holds a marker."""
    blob = "\n".join(OUTPUTS) + json.dumps(captured_logs, default=str)
    for name in ("id", "derived", "session", "user_msg", "user_mem", "user_pref", "retention", "redact"):
        assert store.m[name] not in blob


_HOLDER = textwrap.dedent("""
    import sys, time
    from commands import MemoryLog
    root = sys.argv[1]
    with MemoryLog.open(root) as mem:
        mem.search("routine", record_access=False)
        print("ready", flush=True)
        sys.stdin.readline()
        hits = mem.search(sys.argv[2], record_access=False, mode="text")
        shown = mem.show(sys.argv[3]).state
        maps = open("/proc/self/maps").read()
        stale = [l for l in maps.splitlines() if "(deleted)" in l and root in l]
        print("hits", len(hits), "state", shown, "stale", len(stale), flush=True)
""")


def test_second_process_keeps_working_across_a_purge(tmp_path: Path) -> None:
    """A process holding the store open during the purge reopens and maps no old file."""
    root = tmp_path / "store"
    secret = marker()
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        sid = mem.start_session()
        with mem.batch():
            for i in range(2000):
                mem.add_message(sid, role="user", content=f"routine entry {i}")
        target = mem.add_message(sid, role="user", content=f"the secret is {secret}")
        mem.search("routine", record_access=False)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(root), secret, target],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "ready"
    with MemoryLog.open(root) as mem:
        report = mem.delete(ids=[target], reason="test", requested_by="dpo")
    assert report.verified
    holder.stdin.write("go\n")
    holder.stdin.flush()
    out = holder.stdout.read()
    assert holder.wait(timeout=60) == 0, out
    assert "hits 0 state deleted stale 0" in out
    assert not scan_tree(root, [secret.encode()])[0]


def test_text_shared_with_a_live_entry_is_not_a_leak(tmp_path: Path) -> None:
    """Deleting one of two entries with the same text verifies; the other keeps its text."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        twin = "configure the connection pool before launch"
        first = mem.add_task(sid, content=twin)
        second = mem.add_task(sid, content=twin)
        report = mem.delete(ids=[first], reason="dup", requested_by="dpo")
        assert report.verified
        assert mem.show(second).content == twin and mem.show(first).state == "deleted"
