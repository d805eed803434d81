"""Rule-based extraction (seed 002): the seed's patterns in English and
Portuguese, its limits, once per message, dry runs, the CLI, the backlog step,
and erasure that follows derivation (byte scan)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from commands.app.store.patterns import classify
from commands.app.upkeep.extraction import EXTRACT_ACTOR, extraction_step, plan
from commands.app.upkeep.maintain import MAINTAIN_ACTOR, StepContext
from eventstore import ReadOnlyError, SessionExtracted, SessionNotFoundError, now_micros

from .conftest import Run, head_of

# Seed 002's own words: each of its 10 decision and 10 lesson patterns and the
# words of its session-close extraction, in lines as a conversation has them.
DECISIONS = [
    "We decided to use SSE instead of WebSockets.",  # \bdecid (the seed's API example)
    "In the end we chose MiniSearch for the index.",  # \bchose\b
    "For the vault we will use plain markdown files.",  # \bwill use\b
    "A decisão foi manter o BM25 com fuzzy de 0.2.",  # \bdecisão
    "Escolhemos o formato JSON para os checkpoints.",  # \bescolh
    "Optamos por serializar as escritas numa fila.",  # \boptamos
    "Adotamos o limite de 2000 tokens no contexto.",  # \badotamos
    "Vamos usar o sendBeacon ao fechar o navegador.",  # \bvamos usar\b
    "We went with a 10 minute compaction interval.",  # \bwent with\b
    "The team settled on seven days for checkpoints.",  # \bsettled on\b
]
LESSONS = [
    "I learned that the index must be rebuilt after a trim.",  # \blearned\b
    "Important: the write queue must never block on a failure.",  # \bimportant
    "Note: corrupt checkpoints are removed unconditionally.",  # \bnote:
    "Aprendemos que o import dinâmico evita o ciclo.",  # \baprendemos
    "É importante filtrar as mensagens internas antes.",  # \bimportante
    "A lição: nunca reescrever o arquivo sem backup.",  # \blição
    "A discovery of this week: fuzzy 0.2 is enough.",  # \bdiscovery
    "One insight from the logs: most sessions are short.",  # \binsight
    "Descobrimos que o proxy corta conexões ociosas.",  # \bdescobr
    "We observed that prefix search doubles the hits.",  # \bobserv
]
CLOSE_WORDS = [  # seed 002's session close: decidimos, escolhemos, will use, recomendação,
    # stack principal, aprendemos, lição, risco
    ("Decidimos usar SQLite para o índice local.", "decision"),
    ("Escolhemos a stack com Next.js e TypeScript.", "decision"),
    ("The frontend will use the same heuristics.", "decision"),
    ("Minha recomendação é manter o limite em 30.", "decision"),
    ("A stack principal continua Node com Cursor CLI.", "decision"),
    ("Aprendemos a filtrar mensagens internas.", "lesson"),
    ("Uma lição sobre filas: nunca bloquear a cadeia.", "lesson"),
    ("O risco maior é perder o handoff ao fechar.", "lesson"),
]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[MemoryLog]:
    with MemoryLog.open(tmp_path / "m", embedder=None) as m:
        yield m


def test_the_seeds_patterns_in_both_languages() -> None:
    assert [classify(line) for line in DECISIONS] == ["decision"] * 10
    assert [classify(line) for line in LESSONS] == ["lesson"] * 10
    assert [(line, classify(line)) for line, _ in CLOSE_WORDS] == CLOSE_WORDS
    assert classify("Hello there, how are you doing today?") is None
    assert classify("we decided it") is None  # 13 characters: lines over 15 only
    assert classify("We decided: yes.") == "decision"  # 16


def test_extraction_over_a_conversation(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice", agent_ids=["dev"])
    first = mem.add_message(sid, role="user", content="\n".join(DECISIONS[:5] + LESSONS[:5]))
    second = mem.add_message(sid, role="assistant", content="\n".join(DECISIONS[5:] + LESSONS[5:]) + "\nok")
    mem.add_message(sid, role="system", content="We decided nothing here: system prompts are skipped.")
    report = mem.extract(sid)
    assert len(report.decisions) == 10 and len(report.lessons) == 10 and report.messages == 3
    texts = {mem.show(i).content: mem.show(i) for i in (*report.decisions, *report.lessons)}
    assert set(texts) == set(DECISIONS + LESSONS)
    for line, entry in texts.items():
        assert entry.type == ("decision" if line in DECISIONS else "lesson")
        assert entry.derived_from == ((first,) if line in DECISIONS[:5] + LESSONS[:5] else (second,))
        assert entry.tags == ("auto-extract",) and entry.agent_id == "dev" and entry.session_id == sid
    recorded = [r for r in mem.log.read() if r.type in ("entry.recorded", "session.extracted")][3:]
    assert {r.actor for r in recorded} == {EXTRACT_ACTOR}
    marks = [r.event for r in recorded if isinstance(r.event, SessionExtracted)]
    assert len(marks) == 1 and set(marks[0].entry_ids) == set(report.decisions + report.lessons)
    assert marks[0].trigger == "extract"


def test_limits_cut_and_hashtags(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    long = "We decided to use " + "very " * 100 + "long lines #Infra #db_v2 #infra"
    lines = [long] + [f"We decided on option {i} for step {i}." for i in range(12)]
    lines += [f"Lesson {i}: an important fact about part {i} {'x' * i}." for i in range(12)]
    mem.add_message(sid, role="assistant", content="\n".join([*lines, lines[1]]))
    report = mem.extract(sid)
    assert len(report.decisions) == 10 and len(report.lessons) == 10
    assert report.skipped == {"decisions_over_cap": 3, "lessons_over_cap": 2, "repeated": 1}
    cut = mem.show(report.decisions[0])
    assert len(cut.content) == 300 and cut.content == " ".join(long.split())[:300]
    assert cut.tags == ("auto-extract",)  # the hashtags were past the cut
    sid2 = mem.start_session(user_id="alice")
    mem.add_message(sid2, role="user", content="We decided to tag this #Infra #db_v2 and #Infra again.")
    assert mem.show(mem.extract(sid2).decisions[0]).tags == ("auto-extract", "infra", "db_v2")


def test_a_second_run_extracts_only_newer_messages(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    mem.add_message(sid, role="user", content=DECISIONS[0])
    assert len(mem.extract(sid).decisions) == 1
    head = mem.log.head().seq
    again = mem.extract(sid)
    assert again.decisions == () and again.messages == 0 and mem.log.head().seq == head  # nothing written
    newer = mem.add_message(sid, role="assistant", content=LESSONS[0])
    third = mem.extract(sid)
    assert third.decisions == () and len(third.lessons) == 1 and third.messages == 1
    assert mem.show(third.lessons[0]).derived_from == (newer,)


def test_dry_run_lists_message_ids_and_writes_nothing(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    a = mem.add_message(sid, role="user", content=DECISIONS[1])
    b = mem.add_message(sid, role="assistant", content=f"{LESSONS[1]}\n{DECISIONS[2]}")
    head = mem.log.head().seq
    dry = mem.extract(sid, dry_run=True)
    assert dry.dry_run and dry.decisions == (a, b) and dry.lessons == (b,) and dry.messages == 2
    assert mem.log.head().seq == head
    assert len(mem.extract(sid).decisions) == 2  # the dry run changed nothing


def test_unknown_session_and_read_only(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        with pytest.raises(SessionNotFoundError):
            mem.extract("sess-nope")
        sid = mem.start_session()
        mem.add_message(sid, role="user", content=DECISIONS[0])
    with MemoryLog.open(tmp_path / "m", embedder=None, read_only=True) as ro:
        assert len(ro.extract(sid, dry_run=True).decisions) == 1
        with pytest.raises(ReadOnlyError):
            ro.extract(sid)


def test_cli_extract(run: Run, store: Path) -> None:
    with MemoryLog.open(store, embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        mid = mem.add_message(sid, role="user", content=f"{DECISIONS[3]}\n{LESSONS[3]}")
    head = head_of(store)
    code, out, _ = run("extract", "--session", sid, "--dry-run")
    assert code == 0 and out["decisions"] == [mid] and out["lessons"] == [mid] and out["dry_run"]
    assert head_of(store) == head
    code, text, _ = run("extract", "--session", sid, "--dry-run", as_json=False)
    assert code == 0 and f"decision from {mid}" in text and "lesson from" in text
    code, out, _ = run("extract", "--session", sid)
    assert code == 0 and len(out["decisions"]) == 1 and len(out["lessons"]) == 1 and out["seq"]
    code, text, _ = run("extract", "--session", sid, as_json=False)
    assert code == 0 and "no message since the last extraction" in text
    code, text, _ = run("extract", "--session", sid, "--json", as_json=False)
    assert code == 0 and '"messages":0' in text.replace(" ", "")
    code, _, err = run("extract", "--session", "sess-nope")
    assert code != 0 and "E_SESSION_NOT_FOUND" in err


def test_deleting_the_source_deletes_what_was_extracted(tmp_path: Path) -> None:
    root = tmp_path / "m"
    secret = "zq" + secrets.token_hex(10)
    with MemoryLog.open(root, embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        source = mem.add_message(sid, role="user", content=f"We decided to use {secret} for payments.\n"
                                                           f"Important: {secret} needs a retry budget.")
        keep = mem.add_message(sid, role="user", content=DECISIONS[0])
        mem.close_session(sid)  # handoff and extraction: both derive from the source
        with mem.proj.read() as views:
            derived = set(views.derived_from(source))
        assert len(derived) == 3  # a decision, a lesson and the handoff
        mem.log.backend.seal()  # recent payloads are concealed until sealed (eventstore/lmdb/recent.py)
        assert scan_tree(root, [secret.encode()])[0]  # positive control
        report = mem.delete(ids=[source], reason="erasure request", requested_by="dpo")
        assert derived <= set(report.ids) and report.verified
        assert mem.show(keep).content == DECISIONS[0]
    assert scan_tree(root, [secret.encode()])[0] == {}


def test_the_backlog_step(tmp_path: Path) -> None:
    """Sessions closed while extraction on close was off are the backlog once it is on."""
    with MemoryLog.open(tmp_path / "m", embedder=None, extract_on_close=False) as mem:
        closed = mem.start_session(user_id="alice")
        mem.add_message(closed, role="user", content=DECISIONS[4])
        mem.close_session(closed)
        still_open = mem.start_session(user_id="alice")
        mem.add_message(still_open, role="user", content=DECISIONS[5])
        empty = mem.start_session(user_id="alice")
        mem.close_session(empty)
        assert extraction_step.due(mem.store, now_micros()) == []  # off: by hand only
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        due = extraction_step.due(mem.store, now_micros())
        assert [(d.step, d.target, d.items) for d in due] == [("extraction", closed, 1)]
        assert closed in due[0].reason and "1 messages" in due[0].reason
        context = StepContext(MAINTAIN_ACTOR, now_micros(), mem.summariser)
        assert extraction_step.run(mem.store, due[0], context) == 2  # the decision and session.extracted
        assert extraction_step.due(mem.store, now_micros()) == []
        marks = [r for r in mem.log.read() if isinstance(r.event, SessionExtracted)]
        assert marks[-1].event.trigger == "maintain" and marks[-1].actor == EXTRACT_ACTOR


def test_plan_is_pure_and_takes_the_conversation_only(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    mem.add_message(sid, role="tool", content=DECISIONS[0], tool_call_id="call1")
    mem.add_message(sid, role="user", content=LESSONS[0])
    views = mem.transcript(sid).messages
    assert [f.kind for f in plan([])[0]] == []
    with mem.proj.read() as reader:
        found, skipped = plan(reader.session_entries(sid, ("message",)))
    assert [(f.kind, f.text) for f in found] == [("lesson", LESSONS[0])] and skipped == {}
    assert len(views) == 2
