"""Token-managed memory resources (seed 003): keys, declaration, append and
reads, flushing at the threshold, eviction by priority and by block budget,
TTL, trim and replace, the context's allocation ratios, erasure, replay."""

from __future__ import annotations

import math
import secrets
from pathlib import Path
from typing import Any

import msgspec
import pytest

from commands import MemoryLog
from commands.app import chars_over_four
from commands.app.forgetting.scan import scan_tree
from commands.app.resources import block_budgets, make_spec, render_key, sanitise_key
from commands.app.upkeep import resources as handle_module
from eventstore import InvalidInputError, ReadOnlyError, ResourceSpec, now_micros

THREE = [{"name": "system", "priority": 0, "ratio": 0.1},
         {"name": "facts", "priority": 1, "ratio": 0.2},
         {"name": "turns", "priority": 2, "ratio": 0.7}]


def marker() -> str:
    """A unique token the tokenizer keeps whole."""
    return "zq" + secrets.token_hex(10)


def text_of(tokens: int, word: str = "cache") -> str:
    """A text of exactly ``tokens`` tokens (characters / 4) made of sentences."""
    body = (f"The {word} needs tuning now. " * (tokens * 4 // 25 + 1))[: tokens * 4]
    return body


def types_of(mem: MemoryLog, stream_prefix: str = "resource:") -> list[str]:
    """The event types on the resources' streams, in log order."""
    return [r.type for r in mem.log.read() if r.stream.startswith(stream_prefix)]


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    with MemoryLog.open(tmp_path / "store", redact_on_ingest=False) as m:
        yield m


# -- keys and specs ------------------------------------------------------------

def test_keys_are_sanitised_and_bounded() -> None:
    """Characters outside [A-Za-z0-9-_.:] become one _ per run; a changed or long
    key carries a hash of the raw key, so different raw keys stay apart."""
    assert render_key("{user_id}:{session_id}", {"user_id": "alice", "session_id": "s1"}) == "alice:s1"
    a = render_key("chat/{user_id} x", {"user_id": "bob@x"})
    b = render_key("chat/{user_id} x", {"user_id": "bob_x"})
    assert a != b and a.startswith("chat_bob_x_x.") and b.startswith("chat_bob_x_x.")
    assert all(c.isalnum() or c in "-_.:" for c in a + b)
    long = sanitise_key("k" * 2000)
    assert len(long) == 512 and long != sanitise_key("k" * 1999)
    with pytest.raises(InvalidInputError):
        render_key("{user_id}:{project}", {"user_id": "a"})
    with pytest.raises(InvalidInputError):
        render_key("{user_id}:{session_id}", {"user_id": "a"})


def test_budgets_take_the_lower_of_ratio_and_fixed_limit() -> None:
    spec = make_spec({"id": "chat", "key": "{user_id}", "token_limit": 1000, "blocks": [
        {"name": "system", "priority": 0, "ratio": 0.1},
        {"name": "facts", "priority": 1, "ratio": 0.2, "max_tokens": 150},
        {"name": "turns", "priority": 2, "ratio": 0.7, "max_tokens": 900}]})
    assert block_budgets(spec) == {"system": 100, "facts": 150, "turns": 700}
    with pytest.raises(InvalidInputError):
        make_spec({"id": "bad", "key": "{user_id}", "token_limit": 10,
                   "blocks": [{"name": "a", "ratio": 0.8}, {"name": "b", "ratio": 0.5}]})


def test_declared_by_call_replays_and_config_toml_declares(tmp_path: Path) -> None:
    root = tmp_path / "store"
    root.mkdir(mode=0o700)
    (root / "config.toml").write_text(
        '[[resources]]\nid = "notes"\nkey = "{user_id}"\ntoken_limit = 300\nttl_seconds = 3600\n'
        '[[resources.blocks]]\nname = "facts"\npriority = 1\nratio = 0.5\n')
    with MemoryLog.open(root) as mem:
        mem.declare_resource({"id": "chat", "key": "{user_id}:{session_id}", "token_limit": 500,
                              "blocks": THREE})
        mem.declare_resource({"id": "chat", "key": "{user_id}:{session_id}", "token_limit": 500,
                              "blocks": THREE})  # the same spec again appends nothing
        assert [s.id for s in mem.resources()] == ["chat", "notes"]
        assert types_of(mem, "resources") == ["resource.declared"]
        notes = mem.resource("notes", user_id="alice")
        notes.append("alice likes postgres", block="facts")
        mem.replay()
        assert [s.id for s in mem.resources()] == ["chat", "notes"]
        assert mem.resource("chat", user_id="a", session_id="s").spec.token_limit == 500
        assert [m.content for m in notes.read()] == ["alice likes postgres"]


# -- operations ------------------------------------------------------------------

def test_append_read_length_tokens_trim_replace(mem: MemoryLog) -> None:
    mem.declare_resource({"id": "chat", "key": "{user_id}:{agent_id}", "token_limit": 10_000})
    chat = mem.resource("chat", user_id="alice", agent_id="planner")
    texts = [f"message number {i} about the queue" for i in range(6)]
    ids = [chat.append(t, role="user" if i % 2 else "assistant") for i, t in enumerate(texts)]
    read = chat.read()
    assert [m.id for m in read] == ids and [m.content for m in read] == texts
    assert chat.length() == 6
    assert chat.tokens() == sum(chars_over_four(t) for t in texts)
    assert chat.trim(items=4) == 2
    assert [m.id for m in chat.read()] == ids[2:]
    assert chat.trim(tokens=chars_over_four(texts[-1]) * 2) == 2
    assert [m.id for m in chat.read()] == ids[4:]
    new = chat.replace(["first again", {"content": "second", "role": "assistant"}])
    assert [m.id for m in chat.read()] == new and chat.length() == 2
    assert types_of(mem).count("resource.trimmed") == 2 and "resource.replaced" in types_of(mem)
    shown = mem.show(new[0])
    assert shown.user_id == "alice" and list(shown.tags) == ["resource:chat", "block:default"]


def test_flushes_at_its_threshold_into_a_summary_with_derived_from(mem: MemoryLog) -> None:
    """Reaching 80% of the limit folds the oldest 30% of the items into one
    summary whose derived_from names them; the summary takes their place."""
    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 1000})
    chat = mem.resource("chat", user_id="alice")
    ids = []
    for i in range(7):  # 7 x 100 = 700 tokens: below 800
        ids.append(chat.append(text_of(100, f"topic{i}")))
    assert "resource.flushed" not in types_of(mem)
    ids.append(chat.append(text_of(100, "topic7")))  # 800: the threshold
    assert types_of(mem).count("resource.flushed") == 1
    folded = ids[: math.floor(8 * 0.3)]
    items = chat.read()
    assert items[0].kind == "summary" and items[0].derived_from == tuple(folded)
    assert [m.id for m in items[1:]] == ids[len(folded):]
    assert chat.tokens() < 800
    assert mem.show(items[0].id).derived_from == tuple(folded)
    # the folded messages stay in the log, out of the resource
    assert mem.show(folded[0]).state == "live"


def test_evicts_by_priority_lowest_first(mem: MemoryLog) -> None:
    """Over the limit, the least important block loses its oldest items first;
    the critical block goes last."""
    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 100, "flush_fraction": 0,
                          "blocks": [{"name": "system", "priority": 0},
                                     {"name": "facts", "priority": 1},
                                     {"name": "turns", "priority": 2}]})
    chat = mem.resource("chat", user_id="alice")
    sys_id = chat.append(text_of(20), role="system", block="system")
    assert "block:system" in mem.show(sys_id).tags
    fact = chat.append(text_of(20), block="facts")
    turns = [chat.append(text_of(20)) for _ in range(3)]  # 100: at the limit
    assert "resource.evicted" not in types_of(mem)
    turns.append(chat.append(text_of(20)))  # 120: the oldest turn goes
    assert [m.id for m in chat.read()] == [sys_id, fact, *turns[1:]]
    chat.append(text_of(50), block="facts")  # 150: three turns go before any fact
    left = [m.id for m in chat.read()]
    assert sys_id in left and fact in left and not set(turns) & set(left)
    chat.append(text_of(30), block="facts")  # no turn left: the oldest fact goes, never system
    left = [m.id for m in chat.read()]
    assert sys_id in left and fact not in left
    reasons = [r.event.reason for r in mem.log.read() if r.type == "resource.evicted"]  # type: ignore[union-attr]
    assert reasons and set(reasons) == {"priority"}
    assert chat.tokens() <= 100


def test_block_over_its_budget_evicts_its_oldest(mem: MemoryLog) -> None:
    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 1000, "flush_fraction": 0,
                          "blocks": THREE})
    chat = mem.resource("chat", user_id="alice")
    facts = [chat.append(text_of(60), block="facts") for _ in range(4)]  # budget 200
    assert [m.id for m in chat.read(block="facts")] == facts[1:]
    reasons = [r.event.reason for r in mem.log.read() if r.type == "resource.evicted"]  # type: ignore[union-attr]
    assert reasons == ["block_budget"]


def test_ttl_leaves_reads_then_an_eviction_removes_it(mem: MemoryLog,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 1000, "ttl_seconds": 60})
    chat = mem.resource("chat", user_id="alice")
    old = chat.append("an old remark about caching")
    later = now_micros() + 120_000_000
    monkeypatch.setattr(handle_module, "now_micros", lambda: later)
    assert chat.read() == [] and chat.length() == 0
    assert chat.expire() == 1
    assert [r.event.reason for r in mem.log.read() if r.type == "resource.evicted"] == ["ttl"]  # type: ignore[union-attr]
    monkeypatch.undo()
    assert chat.read() == [] and mem.show(old).state == "live"


def test_as_of_and_read_only(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with MemoryLog.open(root) as mem:
        mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 1000})
        chat = mem.resource("chat", user_id="alice")
        first = chat.append("the first remark on queues")
        seq = mem.last_seq
        chat.replace(["a new start for the queue"])
        assert [m.id for m in chat.read(as_of=seq)] == [first]
        head = mem.log.head().seq
    with MemoryLog.open(root, read_only=True) as mem:
        chat = mem.resource("chat", user_id="alice")
        with pytest.raises(ReadOnlyError):
            chat.append("refused")
        with pytest.raises(ReadOnlyError):
            mem.declare_resource({"id": "other", "key": "{user_id}", "token_limit": 10})
        assert mem.log.head().seq == head and chat.length() == 1


# -- context -------------------------------------------------------------------

def test_allocation_ratios_hold_in_the_context(mem: MemoryLog) -> None:
    """Under a tight budget each block takes at most its ratio of the resource's
    share, and fills it to within one item."""
    mem.declare_resource({"id": "chat", "key": "{user_id}:{session_id}", "token_limit": 100_000,
                          "context_ratio": 0.5, "blocks": THREE})
    sid = mem.start_session(user_id="alice")
    mem.add_message(sid, role="user", content="hello " * 200)
    chat = mem.resource("chat", user_id="alice", session_id=sid)
    item = 10
    for name in ("system", "facts", "turns"):
        for i in range(40):
            chat.append(text_of(item, f"{name}{i}"), block=name)
    budget = 800
    block = mem.context(sid, budget_tokens=budget)
    assert block.tokens <= budget
    got = {s.name: s.tokens for s in block.sections if s.name.startswith("resource:")}
    share = budget * 0.5
    for name, ratio in (("system", 0.1), ("facts", 0.2), ("turns", 0.7)):
        tokens = got[f"resource:chat:{name}"]
        assert ratio * share - (item + 4) <= tokens <= ratio * share, (name, tokens)
    # the newest items are the ones kept
    assert "turns39" in block.text and "turns0 " not in block.text


def test_a_resource_of_no_user_stays_out_of_a_users_context(mem: MemoryLog) -> None:
    """An agent's or everyone's resource holds what any user's turn put there: it
    joins the context of a session with a user only when declared shared; a
    resource keyed by the user or by the session is that user's own."""
    mem.declare_resource({"id": "agentnotes", "key": "{agent_id}", "token_limit": 500})
    mem.declare_resource({"id": "everyone", "key": "global", "token_limit": 500})
    mem.declare_resource({"id": "team", "key": "team:{agent_id}", "token_limit": 500, "shared": True})
    mem.declare_resource({"id": "mine", "key": "{user_id}", "token_limit": 500})
    mem.declare_resource({"id": "turn", "key": "{session_id}", "token_limit": 500})
    alice = mem.start_session(user_id="alice", agent_ids=["coder"])
    bob = mem.start_session(user_id="bob", agent_ids=["coder"])
    secret, common = marker(), marker()
    mem.resource("agentnotes", agent_id="coder").append(f"Bob's hint is {secret}.")
    mem.resource("everyone").append(f"Bob said {secret} once.")
    mem.resource("team", agent_id="coder").append(f"The team style guide is {common}.")
    mem.resource("mine", user_id="bob").append(f"Bob's own {secret}.")
    mem.resource("turn", session_id=bob).append(f"Bob's turn {secret}.")
    mem.resource("mine", user_id="alice").append("Alice likes tea.")
    mem.resource("turn", session_id=alice).append("Alice's turn notes.")
    text = mem.context(alice, budget_tokens=4000).text
    assert secret not in text
    assert common in text and "Alice likes tea." in text and "Alice's turn notes." in text
    names = {s.name for s in mem.context(alice, budget_tokens=4000).sections}
    assert "resource:agentnotes:default" not in names and "resource:everyone:default" not in names
    assert "resource:team:default" in names
    # a session with no user (one deployment, no user ids) sees them all
    anonymous = mem.start_session(agent_ids=["coder"])
    text = mem.context(anonymous, budget_tokens=4000).text
    assert secret in text and common in text


def test_a_resource_keyed_by_the_user_or_session_cannot_be_shared(mem: MemoryLog) -> None:
    head = mem.log.head().seq
    for key in ("{user_id}:{agent_id}", "{session_id}"):
        with pytest.raises(InvalidInputError, match="cannot be shared"):
            mem.declare_resource({"id": "mine", "key": key, "token_limit": 10, "shared": True})
    assert mem.log.head().seq == head and mem.resources() == []


def test_a_declaration_written_before_shared_reads_as_not_shared() -> None:
    """``resource.declared`` payloads from before the field decode as not shared."""
    old = msgspec.msgpack.encode({"id": "notes", "key": "{agent_id}", "token_limit": 10})
    assert msgspec.msgpack.decode(old, type=ResourceSpec).shared is False


# -- privacy -------------------------------------------------------------------

def test_item_and_user_deletion_leave_no_bytes(tmp_path: Path) -> None:
    root = tmp_path / "store"
    one, other, summary_src = marker(), marker(), marker()
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 120})
        chat = mem.resource("chat", user_id="carol")
        gone = chat.append(f"Carol said {one} about the rollout plan.")
        chat.append(f"Carol repeated {other} about the rollout plan.")
        for i in range(8):  # pushes a flush whose summary quotes the sources
            chat.append(f"Carol notes {summary_src} rollout plan step {i} today.")
        assert "resource.flushed" in types_of(mem)
        first = next(r.event for r in mem.log.read() if r.type == "resource.flushed")
        summary = mem.show(first.summary_entry_id)  # type: ignore[union-attr]
        assert gone in summary.derived_from and one in summary.content
        mem.log.backend.seal()  # recent payloads are concealed until sealed (eventstore/lmdb/recent.py)
        assert scan_tree(root, [one.encode()])[0] and scan_tree(root, [summary_src.encode()])[0]
        mem.delete(ids=[gone], reason="erasure request", requested_by="dpo")
        assert not scan_tree(root, [one.encode()])[0]
        assert gone not in [m.id for m in chat.read()]
        # the flush summaries derived (even through another summary) from the deleted item went too
        assert all(m.kind == "message" for m in chat.read())
        assert mem.show(summary.id).state == "deleted"
        mem.delete(user_id="carol", reason="erasure request", requested_by="dpo")
        assert chat.read() == []
    for needle in (one, other, summary_src):
        assert not scan_tree(root, [needle.encode()])[0], needle


def test_handle_delete_erases_everything_it_held(tmp_path: Path) -> None:
    root = tmp_path / "store"
    secret = marker()
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        mem.declare_resource({"id": "scratch", "key": "{session_id}", "token_limit": 50,
                              "flush_fraction": 0})
        pad = mem.resource("scratch", session_id="job-1")
        for i in range(6):  # most are evicted, yet still in the log
            pad.append(f"step {i} used {secret} as scratch value")
        report = pad.delete(reason="job done", requested_by="ops")
        assert report.deleted >= 6 and pad.read() == []
    assert not scan_tree(root, [secret.encode()])[0]


# -- CLI -------------------------------------------------------------------------

def test_cli_declare_append_read_trim_replace(run: Any) -> None:
    assert run("init")[0] == 0
    code, _out, err = run("resource", "declare", "chat", "--key", "{user_id}:{session_id}", "--limit", "500",
                         "--block", "system:0:0.1", "--block", "turns:2:0.7")
    assert code == 0, err
    ids = ["--user", "alice", "--session", "s1"]
    first = run("resource", "append", "chat", *ids, "--content", "hello there")[1]["id"]
    run("resource", "append", "chat", *ids, "--content", "be brief", "--role", "system", "--block", "system")
    read = run("resource", "read", "chat", *ids)[1]
    assert [m["content"] for m in read] == ["hello there", "be brief"] and read[0]["id"] == first
    assert run("resource", "length", "chat", *ids)[1] == {"items": 2, "tokens": 5}
    assert run("resource", "trim", "chat", *ids, "--items", "1")[1]["removed"] == 1
    new = run("resource", "replace", "chat", *ids, "--content", "a", "--content", "b")[1]["ids"]
    assert [m["id"] for m in run("resource", "read", "chat", *ids)[1]] == new
    assert [s["id"] for s in run("resource", "list")[1]] == ["chat"]
    code, _, err = run("resource", "read", "nope", "--user", "x")
    assert code != 0 and err.startswith("Error:")
    code, report, err = run("resource", "delete", "chat", *ids, "--reason", "done", "--requested-by", "ops",
                            "--yes")
    assert code == 0, err
    assert report["deleted"] == 4 and report["verified"] is True  # trimmed and replaced ones too
    assert run("resource", "read", "chat", *ids)[1] == []
    assert run("resource", "declare", "style", "--key", "team", "--limit", "50", "--shared")[0] == 0
    assert next(s for s in run("resource", "list")[1] if s["id"] == "style")["shared"] is True
    code, _, err = run("resource", "declare", "mine", "--key", "{user_id}", "--limit", "50", "--shared")
    assert code != 0 and "cannot be shared" in err


def test_health_and_metrics_report_flushes_and_evictions_without_content(mem: MemoryLog) -> None:
    secret = marker()
    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 100,
                          "blocks": [{"name": "pin", "priority": 0}, {"name": "turns", "priority": 2}]})
    chat = mem.resource("chat", user_id="alice")
    for i in range(12):
        chat.append(f"Turn {i} mentions {secret} and the slow ledger query.")
    chat.append(text_of(90), block="pin")  # over the limit: turns are evicted by priority
    report = mem.health()
    assert report["last"]["flush"] is not None
    text = mem.metrics()
    flushes = next(ln for ln in text.splitlines() if ln.startswith("memlog_flushes_total"))
    evictions = next(ln for ln in text.splitlines() if ln.startswith("memlog_evictions_total"))
    assert float(flushes.split()[-1]) >= 1 and float(evictions.split()[-1]) >= 1
    assert secret not in str(report) and secret not in text
    with mem.store.read() as views:
        act = views.resource_activity()
    assert act.flushes >= 1 and act.evictions >= 1 and act.last_flush_seq is not None


def test_a_plugged_summariser_writes_the_flush(mem: MemoryLog) -> None:
    seen: list[int] = []

    def summarise(texts: Any) -> str:
        seen.append(len(texts))
        return f"{len(texts)} turns about the ledger"

    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 100})
    chat = mem.resource("chat", user_id="alice", summariser=summarise)
    for _ in range(9):
        chat.append(text_of(10))
    assert seen and chat.read()[0].content == f"{seen[0]} turns about the ledger"


def test_the_handles_cache_equals_the_views(mem: MemoryLog) -> None:
    """What the handle keeps from its own appends (to check without reading the
    views) is what the views build from the events, after flushes and evictions."""
    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 300, "blocks": THREE})
    chat = mem.resource("chat", user_id="alice")
    for i in range(40):
        chat.append(text_of(5 + i % 17, f"w{i}"), block=("system", "facts", "turns")[i % 3])
        assert chat._cache is not None
        cached = [(it.entry_id, it.block, it.tokens) for it in chat._cache[1]]
        assert cached == [(m.id, m.block, m.tokens) for m in chat.read()], i
    kinds = {r.type for r in mem.log.read()}
    assert {"resource.flushed", "resource.evicted"} <= kinds


def test_deleting_a_session_erases_the_items_of_resources_keyed_by_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    secret, kept = marker(), marker()
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        mem.declare_resource({"id": "notes", "key": "{user_id}:{session_id}", "token_limit": 1000})
        sid, other = mem.start_session(user_id="dana"), mem.start_session(user_id="dana")
        mem.resource("notes", user_id="dana", session_id=sid).append(f"the locker code is {secret}")
        mem.resource("notes", user_id="dana", session_id=other).append(f"keep {kept} here")
        before = mem.last_seq
        mem.delete(session_id=sid, reason="erasure request", requested_by="dpo")
        assert mem.resource("notes", user_id="dana", session_id=sid).read() == []
        assert len(mem.resource("notes", user_id="dana", session_id=other).read()) == 1
        assert not any(r.type == "summary.resummarised" for r in mem.log.read(before + 1))
    assert not scan_tree(root, [secret.encode()])[0]
    assert scan_tree(root, [kept.encode()])[0]


def test_a_flush_that_folds_the_item_just_appended_keeps_its_text(tmp_path: Path) -> None:
    big = marker()
    with MemoryLog.open(tmp_path / "store", redact_on_ingest=False) as mem:
        mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 100})
        chat = mem.resource("chat", user_id="erin")
        chat.append("a short opening line about the plan")
        last = chat.append(f"The long reply names {big} and then goes on. " + "More words follow here. " * 14)
        folded = [mem.show(i.id) for i in chat.read() if i.kind == "summary"]
        assert [s for s in folded if last in s.derived_from]  # the flush took the new item
        assert all(big in (s.content or "") for s in folded if last in s.derived_from)


def test_two_resources_with_one_key_template_keep_their_own_items(mem: MemoryLog) -> None:
    """The instance key starts with the resource's id: ``notes`` and ``chat`` keyed
    by the same user never share items."""
    mem.declare_resource({"id": "chat", "key": "{user_id}", "token_limit": 1000})
    mem.declare_resource({"id": "notes", "key": "{user_id}", "token_limit": 1000})
    chat, notes = mem.resource("chat", user_id="alice"), mem.resource("notes", user_id="alice")
    said = chat.append("hello there")
    noted = notes.append("remember the milk")
    assert [m.id for m in chat.read()] == [said] and [m.id for m in notes.read()] == [noted]
    assert chat.key != notes.key
