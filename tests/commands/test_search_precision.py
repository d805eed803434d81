"""Precision: a query that matches nothing gets no hit, in every mode and on
every path; identifiers match exactly; a score means the same for every query."""

from __future__ import annotations

import asyncio
import json
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commands import MemoryLog
from commands.app.recall.search import find, make_query

pytest.importorskip("numpy")  # the shipped static model: semantic and hybrid modes

MODES = (None, "text", "semantic", "hybrid")
CODE = "zq2f3wnkj9fcz5ptb304oajl4m9b"  # an account code that appears nowhere
SHORT_CODE = "zqab12cd34ef56"
NOTE = "routine note {} about invoices and shipping latency"


def _notes(store: Path, user: str = "alice") -> None:
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id=user)
        with mem.batch():
            for i in range(300):
                mem.add_message(sid, role="user", content=NOTE.format(i))


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("notes") / "store"
    _notes(store)
    return store


def _search(mem: MemoryLog, text: str, mode: str | None, **kw: Any) -> list[Any]:
    return find(mem.store, make_query(text, mode=mode, limit=10, **kw))


@pytest.mark.parametrize("code", [CODE, SHORT_CODE, f"account {CODE}?"])
def test_account_code_finds_nothing_in_any_mode_library(notes: Path, code: str) -> None:
    with MemoryLog.open(notes) as mem:
        for mode in MODES:
            assert _search(mem, code, mode) == [], mode
            assert mem.search(code, mode=mode) == [], mode
        assert _search(mem, "invoices", None), "a real word still finds the notes"


def test_account_code_finds_nothing_cli(notes: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from commands.cli import cli

    for mode in ("text", "semantic", "hybrid", None):
        flags = [] if mode is None else ["--mode", mode]
        result = CliRunner().invoke(cli, ["--dir", str(notes), "--json", "search", CODE, *flags])
        assert result.exit_code == 0, result.stderr
        assert result.stdout.strip() in ("[]", ""), (mode, result.stdout[:200])


def test_account_code_finds_nothing_mcp(notes: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from tests.mcp_client import serve

    async def scenario() -> None:
        async with serve(notes, "--user", "alice", errlog=tmp_path / "err.log") as c:
            for mode in ("text", "semantic", "hybrid"):
                found = await c.call("recall", query=CODE, mode=mode)
                assert found["results"] == [], mode
            assert (await c.call("recall", query=CODE))["results"] == []
            assert (await c.call("recall", query="invoices"))["results"]

    asyncio.run(scenario())


def test_account_code_finds_nothing_langgraph(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    from commands.langgraph import MemlogStore

    with MemlogStore(tmp_path / "lg") as store:  # the shipped model, no index.embed
        for i in range(300):
            store.put(("notes",), f"n{i}", {"text": NOTE.format(i)})
        for mode_query in (CODE, SHORT_CODE):
            found = store.search(("notes",), query=mode_query, limit=10)
            assert [item.score for item in found if item.score is not None] == []
        scored = store.search(("notes",), query="invoices", limit=10)
        assert scored and all(item.score is not None for item in scored)


def test_identifiers_match_exactly(tmp_path: Path) -> None:
    """A ticket, an order number, an email and a hash match only themselves:
    never fuzzily, never as a prefix, never by one of their pieces."""
    texts = ["ticket ABC-1234 is blocked on the release", "order 48213 shipped to Lisbon",
             "mail from 2f4e-77ab-c9d0 about the invoice", "commit 9f3ab2c7d1 fixed the build",
             "ABC team met; 1234 people came", "order 48214 was refunded"]
    with MemoryLog.open(tmp_path / "store") as mem:
        sid = mem.start_session()
        ids = {mem.add_message(sid, role="user", content=t): t for t in texts}
        for query in ("ABC-1234", "48213", "9f3ab2c7d1"):  # an identifier has no meaning to embed
            assert _search(mem, query, "semantic") == []
        for mode in (None, "text", "hybrid"):
            def found(q: str, mode: str | None = mode) -> list[str]:
                return [ids[r.id] for r in _search(mem, q, mode)]
            assert found("ABC-1234") == [texts[0]], mode
            assert found("48213") == [texts[1]], mode
            assert found("2f4e-77ab-c9d0") == [texts[2]], mode
            assert found("77ab-c9d0-2f4e") == [], mode  # its pieces in another order
            assert found("9f3ab2c7d1") == [texts[3]], mode
            assert found("9f3ab2c7d2") == [], mode   # one character off: no typo tolerance
            assert found("9f3ab2c7") == [], mode     # a prefix: not being typed
            assert found("ABC-9999") == [], mode     # one piece alone is no match
            assert found("joe.kent@example.com") == [], mode  # (an email is redacted on write)
        # plain words keep their typo tolerance and their prefix completion
        assert [ids[r.id] for r in _search(mem, "relese", "text")] == [texts[0]]
        assert [ids[r.id] for r in _search(mem, "Lisb", "text")] == [texts[1]]
        # the redaction's placeholder is a plain word, not an identifier
        mem.add_message(sid, role="user", content="the key was [REDACTED] before the audit")
        assert [r.content for r in _search(mem, "[REDACTED]", "text")] == [
            "the key was [REDACTED] before the audit"]


def test_scores_mean_the_same_for_every_query(tmp_path: Path) -> None:
    """A score is the hit's own evidence: an entry holding every query word
    scores 1 in text mode, whatever the query; one holding part of it
    less; a turn shown for its neighbour's match scores 0; hits of a query
    whose rare part no entry holds all score low, so min_relevance 0.5 leaves
    them out."""
    with MemoryLog.open(tmp_path / "store") as mem:
        sid = mem.start_session()
        for t in ("the postgres failover runbook", "the postgres upgrade plan", "lunch at noon",
                  "kafka consumer lag alarm", "kafka topic retention"):
            mem.add_message(sid, role="user", content=t)
        for query, best, part in (("postgres failover", "the postgres failover runbook",
                                   "the postgres upgrade plan"),
                                  ("kafka lag", "kafka consumer lag alarm", "kafka topic retention")):
            found = {r.content: r.score for r in _search(mem, query, "text")}
            assert found[best] == 1.0 and 0 < found[part] < 0.5, found
            assert found.get("lunch at noon", 0.0) == 0.0
            assert [r.content for r in _search(mem, query, "text", min_relevance=0.5)] == [best]
        weak = _search(mem, f"kafka {CODE}", "text")
        assert weak and all(r.score < 0.5 for r in weak)
        for mode in MODES:
            assert _search(mem, f"kafka {CODE}", mode, min_relevance=0.5) == [], mode
            assert all(0 <= r.score <= 1 for r in _search(mem, "postgres failover", mode))


def test_min_relevance_cli(notes: Path) -> None:
    from click.testing import CliRunner

    from commands.cli import cli

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, ["--dir", str(notes), "--json", "search", *args])
        assert result.exit_code == 0, result.stderr
        return result.stdout

    kept = json.loads(run("invoices", "--min-relevance", "0.5"))
    assert kept and all(hit["score"] >= 0.5 for hit in kept)
    assert json.loads(run(f"invoices {CODE}")), "the notes hold one word of two"
    assert json.loads(run(f"invoices {CODE}", "--min-relevance", "0.5")) == []


# -- the property ------------------------------------------------------------------------

# Entries are made of words over the first half of the alphabet, queries of
# words over the second half and of identifiers, so no query word occurs in
# any entry, nor is it a near word (typo) or a prefix of one.
_ENTRY_WORD = st.text(alphabet=string.ascii_lowercase[:13], min_size=3, max_size=9)
_QUERY_WORD = st.one_of(
    st.text(alphabet=string.ascii_lowercase[13:], min_size=3, max_size=9),
    st.builds(lambda a, n: f"{a}{n}", st.text(alphabet="nopqrstuvwxyz", min_size=1, max_size=4),
              st.integers(0, 10**9)),
    st.builds(lambda a, b: f"{a}@{b}.example", st.text(alphabet="nopqrstuvwxyz", min_size=2, max_size=6),
              st.text(alphabet="nopqrstuvwxyz", min_size=2, max_size=6)))


@settings(max_examples=15)
@given(entries=st.lists(st.lists(_ENTRY_WORD, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=12),
       queries=st.lists(st.lists(_QUERY_WORD, min_size=1, max_size=4).map(" ".join), min_size=1, max_size=4))
def test_a_query_of_words_in_no_entry_finds_nothing(entries: list[str], queries: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch, MemoryLog.open(Path(scratch) / "store") as mem:
        sid = mem.start_session(user_id="u")
        for text in entries:
            mem.add_message(sid, role="user", content=text)
        mem.remember("u", "memo", entries[0])  # a memory's key is searchable: first-half letters too
        for query in queries:
            for mode in MODES:
                for source in ("entries", "both"):
                    assert _search(mem, query, mode, source=source) == [], (query, mode, source)


def test_the_property_sees_hits_when_words_do_occur(tmp_path: Path) -> None:
    """The property's stores are searchable: a word of an entry finds it in every mode."""
    with MemoryLog.open(tmp_path / "store") as mem:
        sid = mem.start_session(user_id="u")
        mem.add_message(sid, role="user", content="blade cafe jam")
        assert all(_search(mem, "cafe", mode) for mode in (None, "text", "hybrid"))


def test_an_updated_entry_keeps_the_words_of_the_others_searchable(tmp_path: Path) -> None:
    """A task done replaces its document; until its segment merges, Tantivy's
    document frequency counts the old version too, which must not make a
    word's weight negative and so drop every hit of a partial match."""
    with MemoryLog.open(tmp_path / "store") as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="cache")
        mem.record_decision(sid, decision="use cache")
        task = mem.add_task(sid, content="do cache")
        mem.complete_task(task)
        found = mem.search("cache latency", mode="text")
        assert sorted(h.content for h in found) == ["cache", "do cache", "use cache"]
        assert all(0 < h.score < 0.5 for h in found)  # one word of two, the rarer missing
