"""The context of a fresh session carries what the user said earlier: with a
query, the best matches of the user's earlier messages and memories form a
section of their own (each with its session and date), within the share of
the budget the ``context_shares`` setting keeps for it; without a query the
block is as it was. Through the library, the CLI and MCP."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from commands import MemoryLog
from eventstore import InvalidInputError

from .conftest import Run

QUESTION = "Where is my sister's wedding?"
ANSWER = "alice: my sister's wedding is in Lisbon, on the twelfth of June"
FILLER = "alice: filler remark number {} on the weather and the garden"
PLAN = "alice: the wedding plan {} " + "detail " * 12
DAY = "2023-05-08"
SECTIONS = ("project", "memories", "preferences", "handoff", "recall", "decisions", "lessons", "findings",
            "tasks", "recovery", "summary", "messages")


def _seed(store: Path, close: bool = False, **settings: object) -> dict[str, str]:
    """alice's earlier session holding the answer early (so the recovery of its
    last messages and a close's handoff do not quote it), a later one, bob's
    session with the same words, and alice's fresh session."""
    with MemoryLog.open(store, **settings) as mem:
        first = mem.start_session(user_id="alice")
        mem.add_message(first, role="user", content=ANSWER, occurred_at=f"{DAY}T10:00:00Z")
        for i in range(10):
            mem.add_message(first, role="user", content=FILLER.format(i), occurred_at=f"{DAY}T10:0{i}:30Z")
        second = mem.start_session(user_id="alice")
        for i in range(4):
            mem.add_message(second, role="user", content=f"alice: later note {i} on the build pipeline")
        bob = mem.start_session(user_id="bob")
        mem.add_message(bob, role="user", content="bob: my sister's wedding is in Oslo")
        if close:
            mem.close_session(first)
            mem.close_session(second)
        fresh = mem.start_session(user_id="alice")
        return {"first": first, "second": second, "bob": bob, "fresh": fresh}


@pytest.mark.parametrize("close", [False, True], ids=["open", "closed"])
def test_a_fresh_session_carries_the_earlier_answer(tmp_path: Path, close: bool) -> None:
    """The answer of an earlier session, with its session and date, in a section
    of its own; never another user's; and not without a query."""
    ids = _seed(tmp_path / "s", close=close)
    with MemoryLog.open(tmp_path / "s") as mem:
        block = mem.context(ids["fresh"], query=QUESTION, budget_tokens=1000)
        plain = mem.context(ids["fresh"], budget_tokens=1000)
    recall = next(s for s in block.sections if s.name == "recall")
    assert recall.text.startswith("Relevant earlier messages and memories:\n")
    assert f"- {DAY} {ids['first']}: {ANSWER}" in recall.text.splitlines()
    assert "Oslo" not in block.text
    assert block.tokens <= 1000
    assert ANSWER not in plain.text and "recall" not in {s.name for s in plain.sections}


def test_memories_join_the_section_and_are_not_repeated(tmp_path: Path) -> None:
    """A memory the memories section does not list (past ``max_user_memories``)
    comes with its key; one it lists is not shown twice."""
    store = tmp_path / "s"
    ids = _seed(store, max_user_memories=1)
    with MemoryLog.open(store, max_user_memories=1) as mem:
        mem.remember("alice", "wedding_venue", "the sister's wedding venue is a chapel in Lisbon")
        mem.remember("alice", "wedding_date", "the sister's wedding date is the twelfth of June")
        block = mem.context(ids["fresh"], query=QUESTION, budget_tokens=1000)
    recall = next(s for s in block.sections if s.name == "recall")
    memories = next(s for s in block.sections if s.name == "memories")
    assert "wedding_date" in memories.text and "wedding_date" not in recall.text
    assert any(line.endswith("memory wedding_venue: the sister's wedding venue is a chapel in Lisbon")
               for line in recall.text.splitlines())


def test_sections_and_the_budget_report(tmp_path: Path) -> None:
    """Each section reports the tokens it took, the tokens its share kept for it
    and the items it left out; the recall section holds its share."""
    store = tmp_path / "s"
    ids = _seed(store)
    with MemoryLog.open(store) as mem:
        for i in range(40):
            mem.add_message(ids["second"], role="user", content=PLAN.format(i))
        block = mem.context(ids["fresh"], query=QUESTION, budget_tokens=300)
    report = {s["name"]: s for s in block.to_dict()["sections"]}
    recall = report["recall"]
    assert recall["reserved"] == 180  # the default share, 60 %
    assert recall["tokens"] > 150 and recall["removed"] > 0  # within its share, less a last whole item
    assert "recall" in block.trimmed and block.tokens <= 300
    assert all(s["reserved"] == 0 for name, s in report.items() if name != "recall")
    assert all({"name", "tokens", "items", "removed", "cut", "reserved"} <= set(s) for s in report.values())


def test_the_share_is_a_setting(tmp_path: Path) -> None:
    """context_shares: a partial table keeps the other defaults; a smaller share
    keeps less; unknown sections and shares out of range are refused."""
    store = tmp_path / "s"
    ids = _seed(store)
    (store / "config.toml").write_text("[context_shares]\nrecall = 0.25\n")
    with MemoryLog.open(store) as mem:
        assert mem.settings.context_shares == {n: 0.25 if n == "recall" else 0.0 for n in SECTIONS}
        for i in range(40):
            mem.add_message(ids["second"], role="user", content=PLAN.format(i))
        block = mem.context(ids["fresh"], query=QUESTION, budget_tokens=400)
    assert next(s for s in block.sections if s.name == "recall").reserved == 100
    for bad, word in (({"recal": 0.5}, "recal"), ({"recall": 1.5}, "context_shares"),
                      ({"recall": 0.6, "messages": 0.6}, "context_shares")):
        with pytest.raises(InvalidInputError, match=word):
            MemoryLog.open(tmp_path / "bad", context_shares=bad).close()


def test_without_a_query_the_block_is_as_before(tmp_path: Path) -> None:
    """No query: the fresh session's block is today's (the recovery of the
    previous session's last messages); the query only adds its section."""
    store = tmp_path / "s"
    ids = _seed(store)
    with MemoryLog.open(store, memory_instruction=False) as mem:  # the block without its closing instruction
        plain = mem.context(ids["fresh"], budget_tokens=1000)
        asked = mem.context(ids["fresh"], query=QUESTION, budget_tokens=1000)
    last = "\n".join(f"[user]: alice: later note {i} on the build pipeline" for i in (1, 2, 3))
    assert plain.text == f"## MEMORY CONTEXT\n\nRecovering previous session:\n{last}"
    report = [(s.name, s.items, s.removed, s.cut, s.reserved) for s in plain.sections]
    assert report == [("recovery", 3, 0, False, 0)]
    assert plain.dropped == () and plain.trimmed == ()
    assert [s.text for s in asked.sections if s.name != "recall"] == [s.text for s in plain.sections]


def test_cli_context_with_a_query(run: Run, store: Path) -> None:
    """``memlog context SID --query Q`` carries the earlier answer and reports the section."""
    ids = _seed(store)
    code, out, err = run("context", ids["fresh"], "--query", QUESTION, "--budget", "1000")
    assert code == 0, err
    assert ANSWER in out["text"] and ids["first"] in out["text"]
    recall = next(s for s in out["sections"] if s["name"] == "recall")
    assert recall["reserved"] > 0 and recall["items"] >= 1
    code, out, err = run("context", ids["fresh"], "--budget", "1000")
    assert code == 0 and ANSWER not in out["text"]


def test_mcp_context_tool_with_a_query(tmp_path: Path) -> None:
    """MCP's ``context`` tool, served for alice, carries her earlier answer (not bob's)."""
    pytest.importorskip("mcp")
    from tests.mcp_client import serve

    store = tmp_path / "s"
    ids = _seed(store)

    async def ask() -> tuple[dict[str, object], dict[str, object]]:
        async with serve(store, "--user", "alice", errlog=tmp_path / "err.log") as c:
            asked = await c.call("context", session_id=ids["fresh"], query=QUESTION, budget=1000)
            plain = await c.call("context", session_id=ids["fresh"], budget=1000)
            return asked, plain

    asked, plain = asyncio.run(ask())
    assert ANSWER in str(asked["text"]) and "Oslo" not in str(asked["text"])
    sections = asked["sections"]
    assert isinstance(sections, list)
    assert any(s["name"] == "recall" and s["reserved"] > 0 for s in sections)
    assert ANSWER not in str(plain["text"])


@pytest.mark.slow
def test_bench_context_runs_and_prints_its_keys(tmp_path: Path) -> None:
    """bench_context on two tiny conversations: its --json keys, the shares in [0, 100]."""
    from tests.test_tools import TOOLS, _tiny_locomo

    data = _tiny_locomo(tmp_path / "tiny.json")
    result = subprocess.run([sys.executable, str(TOOLS / "bench_context.py"), "--data", str(data), "--json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    keys = ["evidence_open", "evidence_closed", "evidence_search_only"]
    assert set(keys) <= set(out) and out["questions"] == 4 and out["budget_tokens"] == 1000
    assert all(0 <= out[k] <= 100 for k in keys) and out["evidence_open"] > 0
