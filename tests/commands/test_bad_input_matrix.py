"""The bad-input matrix: every case gives a clean error, writes nothing, and
leaves the chain verifying.

CLI cases run with ``--json`` on one shared store: exit code not 0 and not
70, exactly one ``Error: ... [E_CODE]`` line on stderr, no traceback. Library
cases call ``MemoryLog`` methods on another shared store: the exception is a
:class:`~eventstore.MemlogError`. After each case the log head is unchanged
and ``EventLog.verify().ok`` holds. Placeholders in braces name the ids and
paths the module fixture made.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from commands import MemoryLog
from commands.cli import cli
from eventstore import EventLog, MemlogError

# -- the shared stores ---------------------------------------------------------


@dataclass
class World:
    """The stores and ids every case may name."""

    root: Path
    cli_store: Path
    lib: MemoryLog
    ids: dict[str, str]  # placeholders for the CLI store, e.g. {"sid": ...}
    lib_ids: dict[str, str]


def _seed(mem: MemoryLog) -> dict[str, str]:
    sid = mem.start_session(user_id="alice")
    asid = mem.start_session(user_id="alice")
    ids = {
        "sid": sid, "asid": asid,
        "mid": mem.add_message(sid, role="user", content="hello database world"),
        "tid": mem.add_task(sid, content="configure the pool"),
        "fid": mem.record_finding(sid, description="pool too small"),
        "did": mem.record_decision(sid, decision="use postgres"),
    }
    mem.remember("alice", "fav", "postgres")
    mem.archive_session(asid)
    return ids


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("matrix")
    (root / "file").write_text("not a store")
    (root / "empty").mkdir()
    (root / "badcfg").mkdir()
    (root / "badcfg" / "config.toml").write_text("max_content_bytes = [\n")
    # -- upkeep: without auto-restore, a write into the archived session is refused
    # (with it, the write would restore the session: see tests/commands/test_idle_sessions.py)
    (root / "cli").mkdir(mode=0o700)
    (root / "cli" / "config.toml").write_text("auto_restore = false\n")
    with MemoryLog.open(root / "cli") as mem:
        ids = _seed(mem)
    ids.update(file=str(root / "file"), empty=str(root / "empty"), badcfg=str(root / "badcfg"))
    with MemoryLog.open(root / "lib", auto_restore=False) as lib:
        yield World(root, root / "cli", lib, ids, _seed(lib))


def _state(log_dir: Path) -> tuple[int, bool]:
    with EventLog.open(log_dir) as log:
        return log.head().seq, log.verify().ok


# -- CLI cases: (id, args, expected exit code) --------------------------------------

IDS = [
    ("show-empty-id", ["show", ""], 2),
    ("show-bad-id", ["show", "bad id!"], 2),
    ("show-long-id", ["show", "x" * 200], 2),
    ("show-unknown", ["show", "msg-000000000000"], 3),
    ("session-show-unknown", ["session", "show", "sess-nope"], 3),
    ("session-show-bad-id", ["session", "show", "bad/id"], 2),
    ("archive-unknown", ["session", "archive", "sess-nope"], 3),
    ("archive-archived", ["session", "archive", "{asid}"], 4),
    ("restore-live", ["session", "restore", "{sid}"], 2),
    ("restore-unknown", ["session", "restore", "sess-nope"], 3),
    ("task-done-unknown", ["task", "done", "task-nope"], 3),
    ("task-done-wrong-kind", ["task", "done", "{mid}"], 2),
    ("task-done-bad-id", ["task", "done", "bad id"], 2),
    ("edit-unknown", ["edit", "les-nope", "--content", "x"], 3),
    ("edit-bad-id", ["edit", "bad id", "--content", "x"], 2),
    ("edit-empty", ["edit", "{mid}", "--content", ""], 2),
    ("history-unknown", ["audit", "history", "nope"], 3),
    ("context-unknown", ["context", "sess-nope"], 3),
    ("context-bad-id", ["context", "bad id"], 2),
]

SESSIONS = [
    ("start-bad-user", ["session", "start", "--user", "bad user"], 2),
    ("start-bad-agent", ["session", "start", "--agent", "a b"], 2),
    ("start-meta-no-equals", ["session", "start", "--meta", "novalue"], 2),
    ("start-meta-no-key", ["session", "start", "--meta", "=v"], 2),
    ("start-empty-tag", ["session", "start", "--tag", " "], 2),
    ("start-long-tag", ["session", "start", "--tag", "x" * 201], 2),
    ("start-empty-channel", ["session", "start", "--channel", ""], 2),
    ("start-unknown-option", ["session", "start", "--colour", "red"], 2),
]

MSG = ["add", "message", "{sid}", "--role", "user"]
MESSAGES = [
    ("msg-empty", [*MSG, "--content", ""], 2),
    ("msg-blank", [*MSG, "--content", "  \n "], 2),
    ("msg-bad-role", ["add", "message", "{sid}", "--role", "robot", "--content", "x"], 2),
    ("msg-no-role", ["add", "message", "{sid}", "--content", "x"], 2),
    ("msg-no-content", MSG, 2),
    ("msg-unknown-session", ["add", "message", "sess-nope", "--role", "user", "--content", "x"], 3),
    ("msg-archived-session", ["add", "message", "{asid}", "--role", "user", "--content", "x"], 4),
    ("msg-bad-session-id", ["add", "message", "bad id", "--role", "user", "--content", "x"], 2),
    ("msg-naive-time", [*MSG, "--content", "x", "--at", "2026-01-01T00:00:00"], 2),
    ("msg-garbage-time", [*MSG, "--content", "x", "--at", "yesterday"], 2),
    ("msg-year-10000", [*MSG, "--content", "x", "--at", "10000-01-01T00:00:00Z"], 2),
    ("msg-negative-time", [*MSG, "--content", "x", "--at", "-1"], 2),
    ("msg-before-1970", [*MSG, "--content", "x", "--at", "1969-12-31T23:59:59Z"], 2),
    ("msg-bad-agent", [*MSG, "--content", "x", "--agent", "bad agent"], 2),
    ("msg-empty-tag", [*MSG, "--content", "x", "--tag", ""], 2),
    ("msg-empty-topic", [*MSG, "--content", "x", "--topic", ""], 2),
    ("msg-long-topic", [*MSG, "--content", "x", "--topic", "t" * 201], 2),
    ("msg-two-stdin", ["add", "decision", "{sid}", "--decision", "-", "--rationale", "-"], 2),
]

ENTRIES = [
    ("decision-empty", ["add", "decision", "{sid}", "--decision", ""], 2),
    ("decision-bad-impact", ["add", "decision", "{sid}", "--decision", "d", "--impact", "huge"], 2),
    ("decision-bad-made-by", ["add", "decision", "{sid}", "--decision", "d", "--made-by", "a b"], 2),
    ("decision-bad-approver", ["add", "decision", "{sid}", "--decision", "d", "--approved-by", "x y"], 2),
    ("decision-empty-alternative", ["add", "decision", "{sid}", "--decision", "d", "--alternative", ""], 2),
    ("decision-archived", ["add", "decision", "{asid}", "--decision", "d"], 4),
    ("decision-empty-rationale", ["add", "decision", "{sid}", "--decision", "d", "--rationale", " "], 2),
    ("finding-bad-severity", ["add", "finding", "{sid}", "--description", "f", "--severity", "x"], 2),
    ("finding-empty-category", ["add", "finding", "{sid}", "--description", "f", "--category", ""], 2),
    ("finding-unknown-session", ["add", "finding", "sess-nope", "--description", "f"], 3),
    ("finding-empty", ["add", "finding", "{sid}", "--description", ""], 2),
    ("lesson-empty", ["add", "lesson", "{sid}", "--content", ""], 2),
    ("task-unknown-session", ["add", "task", "sess-nope", "--content", "x"], 3),
    ("handoff-archived", ["add", "handoff", "{asid}", "--content", "x"], 4),
    ("project-empty", ["add", "project", "{sid}", "--content", ""], 2),
    ("project-garbage-time", ["add", "project", "{sid}", "--content", "x", "--at", "garbage"], 2),
    ("add-unknown-kind", ["add", "summary", "{sid}", "--content", "x"], 2),
]

PREF = ["add", "preference", "--user", "alice", "--key", "k"]
PREFERENCES = [
    ("pref-bad-user", ["add", "preference", "--user", "bad user", "--key", "k", "--value", "v"], 2),
    ("pref-empty-key", ["add", "preference", "--user", "alice", "--key", "", "--value", "v"], 2),
    ("pref-long-key", ["add", "preference", "--user", "alice", "--key", "k" * 201, "--value", "v"], 2),
    ("pref-empty-value", [*PREF, "--value", ""], 2),
    ("pref-confidence-2", [*PREF, "--value", "v", "--confidence", "2"], 2),
    ("pref-confidence-negative", [*PREF, "--value", "v", "--confidence", "-0.1"], 2),
    ("pref-confidence-nan", [*PREF, "--value", "v", "--confidence", "nan"], 2),
    ("pref-confidence-inf", [*PREF, "--value", "v", "--confidence", "inf"], 2),
    ("pref-confidence-word", [*PREF, "--value", "v", "--confidence", "high"], 2),
    ("pref-empty-category", [*PREF, "--value", "v", "--category", ""], 2),
]

MEMORIES = [
    ("remember-uppercase-key", ["remember", "--user", "alice", "Bad-Key", "x"], 2),
    ("remember-reserved-key", ["remember", "--user", "alice", "system_x", "x"], 2),
    ("remember-long-key", ["remember", "--user", "alice", "k" * 65, "x"], 2),
    ("remember-empty-content", ["remember", "--user", "alice", "k", ""], 2),
    ("remember-bad-user", ["remember", "--user", "bad user", "k", "x"], 2),
    ("remember-digit-key", ["remember", "--user", "alice", "1key", "x"], 2),
    ("forget-unknown-key", ["forget", "--user", "alice", "nokey"], 3),
    ("forget-bad-key", ["forget", "--user", "alice", "Bad"], 2),
    ("memories-bad-user", ["memories", "--user", "bad user"], 2),
]

SEARCHES = [
    ("search-limit-0", ["search", "x", "--limit", "0"], 2),
    ("search-limit-1001", ["search", "x", "--limit", "1001"], 2),
    ("search-limit-word", ["search", "x", "--limit", "ten"], 2),
    ("search-limit-float", ["search", "x", "--limit", "2.5"], 2),
    ("search-min-relevance-2", ["search", "x", "--min-relevance", "2"], 2),
    ("search-min-relevance-nan", ["search", "x", "--min-relevance", "nan"], 2),
    ("search-bad-sort", ["search", "x", "--sort", "sideways"], 2),
    ("search-bad-type", ["search", "x", "--type", "bogus"], 2),
    ("search-garbage-since", ["search", "x", "--since", "garbage"], 2),
    ("search-year-10000", ["search", "x", "--since", "10000-01-01T00:00:00Z"], 2),
    ("search-since-after-until", ["search", "x", "--since", "2026-02-01T00:00:00Z",
                                  "--until", "2026-01-01T00:00:00Z"], 2),
    ("search-long-query", ["search", "x" * 1001], 2),
    ("search-bad-session", ["search", "x", "--session", "bad id"], 2),
    ("search-naive-until", ["search", "x", "--until", "2026-01-01T00:00:00"], 2),
    ("search-bad-user", ["search", "x", "--user", "bad user"], 2),
    ("context-budget-10", ["context", "{sid}", "--budget", "10"], 2),
    ("context-budget-negative", ["context", "{sid}", "--budget", "-5"], 2),
]

AUDITS = [
    ("at-garbage", ["audit", "at", "garbage", "entry", "{mid}"], 2),
    ("at-after-head", ["audit", "at", "@999999", "entry", "{mid}"], 2),
    ("at-negative-seq", ["audit", "at", "@-1", "entry", "{mid}"], 2),
    ("at-year-10000", ["audit", "at", "10000-01-01T00:00:00Z", "entry", "{mid}"], 2),
    ("at-naive", ["audit", "at", "2026-01-01T00:00:00", "entry", "{mid}"], 2),
    ("at-unknown-entry", ["audit", "at", "@1", "entry", "msg-nope"], 3),
    ("at-unknown-session", ["audit", "at", "@1", "session", "sess-nope"], 3),
    ("at-search-limit-0", ["audit", "at", "@1", "search", "x", "--limit", "0"], 2),
    ("log-limit-0", ["audit", "log", "--limit", "0"], 2),
    ("log-garbage-since", ["audit", "log", "--since", "garbage"], 2),
    ("deletions-garbage-since", ["audit", "deletions", "--since", "garbage"], 2),
    ("deletions-bad-format", ["audit", "deletions", "--format", "pdf"], 2),
]

DEL = ["--reason", "r", "--requested-by", "me", "--yes"]
RED = ["--reason", "r", "--requested-by", "me"]
FORGETTING = [
    ("delete-nothing", ["delete", *DEL], 2),
    ("delete-two-scopes", ["delete", "--id", "{mid}", "--session", "{sid}", *DEL], 2),
    ("delete-empty-reason", ["delete", "--id", "{mid}", "--reason", "", "--requested-by", "me", "--yes"], 2),
    ("delete-bad-requester", ["delete", "--id", "{mid}", "--reason", "r", "--requested-by", "a b", "--yes"],
     2),
    ("delete-no-yes", ["delete", "--id", "{mid}", "--reason", "r", "--requested-by", "me"], 2),
    ("delete-garbage-before", ["delete", "--before", "garbage", *DEL], 2),
    ("delete-bad-type", ["delete", "--type", "bogus", *DEL], 2),
    ("delete-year-10000", ["delete", "--after", "10000-01-01T00:00:00Z", *DEL], 2),
    ("delete-bad-id", ["delete", "--id", "bad id", *DEL], 2),
    ("delete-selects-nothing", ["delete", "--tag", "no-such-tag", *DEL], 2),
    ("redact-backreference", ["redact", "{mid}", "--regex", r"(a)\1", *RED], 2),
    ("redact-lookahead", ["redact", "{mid}", "--regex", "(?=x)x", *RED], 2),
    ("redact-lookbehind", ["redact", "{mid}", "--regex", "(?<=a)b", *RED], 2),
    ("redact-redos-no-match", ["redact", "{mid}", "--regex", "(a+)+$", *RED], 2),
    ("redact-malformed", ["redact", "{mid}", "--regex", "[", *RED], 2),
    ("redact-empty-match", ["redact", "{mid}", "--regex", "x*", *RED], 2),
    ("redact-huge-repeat", ["redact", "{mid}", "--regex", "a{2000}", *RED], 2),
    ("redact-too-large", ["redact", "{mid}", "--regex", "w[a-z]{500}", *RED], 2),
    ("redact-bad-pattern", ["redact", "{mid}", "--pattern", "bogus", *RED], 2),
    ("redact-unknown-entry", ["redact", "msg-nope", *RED], 3),
    ("redact-nothing-matches", ["redact", "{mid}", "--pattern", "email", *RED], 2),
    ("redact-empty-reason", ["redact", "{mid}", "--reason", "", "--requested-by", "me"], 2),
    ("retention-garbage", ["retention", "--as-of", "garbage"], 2),
    ("retention-year-10000", ["retention", "--as-of", "10000-01-01T00:00:00Z"], 2),
]

MAINTENANCE = [
    ("decay-rate-inf", ["decay", "--rate", "message=inf"], 2),
    ("decay-rate-nan", ["decay", "--rate", "message=nan"], 2),
    ("decay-rate-negative", ["decay", "--rate", "message=-1"], 2),
    ("decay-rate-bad-kind", ["decay", "--rate", "bogus=1"], 2),
    ("decay-rate-no-value", ["decay", "--rate", "message"], 2),
    ("decay-floor-2", ["decay", "--floor", "2"], 2),
    ("decay-floor-nan", ["decay", "--floor", "nan"], 2),
    ("decay-garbage-as-of", ["decay", "--as-of", "garbage"], 2),
    ("decay-year-10000", ["decay", "--as-of", "10000-01-01T00:00:00Z"], 2),
    ("decay-show-with-rate", ["decay", "--show", "--rate", "message=1"], 2),
    ("replay-views-alone", ["replay", "--projection", "views"], 2),
    ("replay-bad-projection", ["replay", "--projection", "bogus"], 2),
    ("unknown-command", ["frobnicate"], 2),
    ("add-unknown-subcommand", ["add", "bogus"], 2),
    ("show-missing-argument", ["show"], 2),
]

DIRS = [
    ("dir-file-init", ["--dir", "{file}", "init"], 5),
    ("dir-file-write", ["--dir", "{file}", "session", "start"], 5),
    ("dir-file-read", ["--dir", "{file}", "stats"], 3),
    ("dir-devnull-write", ["--dir", "/dev/null", "session", "start"], 5),
    ("dir-devnull-read", ["--dir", "/dev/null", "search", "x"], 3),
    ("dir-under-file", ["--dir", "{file}/sub", "add", "lesson", "s", "--content", "x"], 5),
    ("dir-empty-read", ["--dir", "{empty}", "stats"], 3),
    ("dir-empty-verify", ["--dir", "{empty}", "audit", "verify"], 3),
    ("dir-bad-config", ["--dir", "{badcfg}", "init"], 2),
]

ENVS = [
    ("env-max-content-word", ["session", "start"], 2, {"MEMLOG_MAX_CONTENT_BYTES": "lots"}),
    ("env-max-content-0", ["session", "start"], 2, {"MEMLOG_MAX_CONTENT_BYTES": "0"}),
    ("env-redact-maybe", ["session", "start"], 2, {"MEMLOG_REDACT_ON_INGEST": "maybe"}),
    ("env-shards-0", ["session", "start"], 2, {"MEMLOG_SEARCH_SHARDS": "0"}),
    ("env-oversized-content", [*MSG, "--content", "x" * 11], 2, {"MEMLOG_MAX_CONTENT_BYTES": "10"}),
]

CLI_CASES = [(*c, None) for c in (IDS + SESSIONS + MESSAGES + ENTRIES + PREFERENCES + MEMORIES + SEARCHES
                                  + AUDITS + FORGETTING + MAINTENANCE + DIRS)] + ENVS
_ERROR_LINE = re.compile(r"^Error: .+ \[E_[A-Z_]+\]$")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _fill(arg: str, ids: dict[str, str]) -> str:
    """``arg`` with each known ``{name}`` replaced (regex braces such as ``{2000}`` stay)."""
    return _PLACEHOLDER.sub(lambda m: ids.get(m.group(1), m.group(0)), arg)


@pytest.mark.parametrize(("args", "exit_code", "env"), [c[1:] for c in CLI_CASES],
                         ids=[c[0] for c in CLI_CASES])
def test_cli_bad_input(world: World, args: list[str], exit_code: int, env: dict[str, str] | None) -> None:
    """Exit code as expected (never 0 or 70), exactly one Error line, no traceback, nothing written."""
    before = _state(world.cli_store / "log")
    argv = ["--dir", str(world.cli_store), "--json", *(_fill(a, world.ids) for a in args)]
    result = CliRunner().invoke(cli, argv, env=env, input="stdin text")
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert result.exit_code == exit_code, result.stderr
    # replay's progress label ("replaying") may come first; admin.py draws it before it validates
    assert len(errors) == 1 and _ERROR_LINE.match(errors[0]), result.stderr
    assert result.stderr.replace(errors[0], "").strip() in ("", "replaying"), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert _state(world.cli_store / "log") == before and before[1]
    assert not (world.root / "file" / "sub").exists() and not any((world.root / "empty").iterdir())


# -- library cases: (id, call) ---------------------------------------------------

Call = Callable[[MemoryLog, dict[str, str]], Any]
NAIVE = datetime(2026, 1, 1)  # naive on purpose
LATE = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # year 10000 in UTC


def msg(**kw: Any) -> Call:
    """add_message on the live session with the given overrides."""
    return lambda m, i: m.add_message(**{"session_id": i["sid"], "role": "user", "content": "x", **kw})


LIB_WRITES: list[tuple[str, Call]] = [
    ("content-none", msg(content=None)),
    ("content-int", msg(content=5)),
    ("content-empty", msg(content="")),
    ("content-blank", msg(content=" \t\n")),
    ("content-oversized", msg(content="x" * ((1 << 20) + 1))),
    ("role-bad", msg(role="robot")),
    ("role-none", msg(role=None)),
    ("time-naive-datetime", msg(occurred_at=NAIVE)),
    ("time-garbage", msg(occurred_at="garbage")),
    ("time-year-10000", msg(occurred_at="10000-01-01T00:00:00Z")),
    ("time-year-10000-by-zone", msg(occurred_at=LATE)),
    ("time-negative", msg(occurred_at=-1)),
    ("time-2-63-plus-5", msg(occurred_at=2**63 + 5)),
    ("time-bool", msg(occurred_at=True)),
    ("time-float", msg(occurred_at=1.5)),
    ("importance-nan", msg(importance=math.nan)),
    ("importance-inf", msg(importance=math.inf)),
    ("importance-negative", msg(importance=-0.1)),
    ("importance-above-1", msg(importance=1.5)),
    ("importance-bool", msg(importance=True)),
    ("importance-string", msg(importance="0.5")),
    ("tags-string", msg(tags="tag")),
    ("tags-empty-item", msg(tags=[""])),
    ("tags-long-item", msg(tags=["x" * 201])),
    ("tags-int-item", msg(tags=[5])),
    ("agent-bad", msg(agent_id="bad agent")),
    ("session-empty-id", msg(session_id="")),
    ("session-bad-id", msg(session_id="bad id")),
    ("session-int-id", msg(session_id=123)),
    ("session-unknown", msg(session_id="sess-nope")),
    ("session-archived", lambda m, i: m.add_message(i["asid"], role="user", content="x")),
    ("decision-bad-impact", lambda m, i: m.record_decision(i["sid"], decision="d", impact="huge")),
    ("decision-alternatives-string", lambda m, i: m.record_decision(i["sid"], decision="d",
                                                                     alternatives="abc")),
    ("finding-bad-status", lambda m, i: m.record_finding(i["sid"], description="f", status="weird")),
    ("finding-bad-severity", lambda m, i: m.record_finding(i["sid"], description="f", severity="x")),
    ("lesson-bad-derived", lambda m, i: m.record_lesson(i["sid"], content="x", derived_from=["a b"])),
    ("summary-empty", lambda m, i: m.record_summary(i["sid"], content="")),
    ("pref-empty-key", lambda m, i: m.set_preference("alice", key="", value="v")),
    ("pref-confidence-nan", lambda m, i: m.set_preference("alice", key="k", value="v", confidence=math.nan)),
    ("pref-confidence-2", lambda m, i: m.set_preference("alice", key="k", value="v", confidence=2)),
    ("pref-bad-user", lambda m, i: m.set_preference("bad user", key="k", value="v")),
    ("pref-archived-session", lambda m, i: m.set_preference("alice", key="k", value="v",
                                                            session_id=i["asid"])),
]

LIB_UPDATES: list[tuple[str, Call]] = [
    ("complete-message", lambda m, i: m.complete_task(i["mid"])),
    ("complete-unknown", lambda m, i: m.complete_task("task-nope")),
    ("finding-status-bogus", lambda m, i: m.update_finding(i["fid"], status="bogus")),
    ("finding-status-on-task", lambda m, i: m.update_finding(i["tid"], status="resolved")),
    ("importance-nan-update", lambda m, i: m.set_importance(i["mid"], math.nan)),
    ("importance-2-update", lambda m, i: m.set_importance(i["mid"], 2)),
    ("importance-bool-update", lambda m, i: m.set_importance(i["mid"], True)),
    ("importance-unknown", lambda m, i: m.set_importance("msg-nope", 0.5)),
    ("remember-bad-key", lambda m, i: m.remember("alice", "Bad", "x")),
    ("remember-reserved", lambda m, i: m.remember("alice", "internal_x", "x")),
    ("remember-long-key", lambda m, i: m.remember("alice", "k" * 65, "x")),
    ("remember-empty", lambda m, i: m.remember("alice", "k", "")),
    ("remember-bad-user", lambda m, i: m.remember("", "k", "x")),
    ("forget-unknown", lambda m, i: m.forget("alice", "nokey")),
    ("start-meta-int", lambda m, i: m.start_session(metadata={"k": 5})),
    ("start-meta-string", lambda m, i: m.start_session(metadata="k=v")),
    ("start-tags-string", lambda m, i: m.start_session(tags="t")),
    ("start-duplicate", lambda m, i: m.start_session(session_id=i["sid"])),
    ("start-bad-channel", lambda m, i: m.start_session(channel="")),
    ("archive-archived", lambda m, i: m.archive_session(i["asid"])),
    ("archive-unknown", lambda m, i: m.archive_session("sess-nope")),
    ("restore-live", lambda m, i: m.restore_session(i["sid"])),
]

LIB_READS: list[tuple[str, Call]] = [
    ("search-limit-0", lambda m, i: m.search("x", limit=0)),
    ("search-limit-1001", lambda m, i: m.search("x", limit=1001)),
    ("search-limit-bool", lambda m, i: m.search("x", limit=True)),
    ("search-limit-float", lambda m, i: m.search("x", limit=2.5)),
    ("search-limit-string", lambda m, i: m.search("x", limit="10")),
    ("search-min-relevance-nan", lambda m, i: m.search("x", min_relevance=math.nan)),
    ("search-min-relevance-2", lambda m, i: m.search("x", min_relevance=2)),
    ("search-sort-bogus", lambda m, i: m.search("x", sort="bogus")),
    ("search-kind-bogus", lambda m, i: m.search("x", kinds=["bogus"])),
    ("search-text-int", lambda m, i: m.search(5)),
    ("search-text-long", lambda m, i: m.search("x" * 1001)),
    ("search-since-garbage", lambda m, i: m.search("x", since="garbage")),
    ("search-since-after-until", lambda m, i: m.search("x", since=2_000_000, until=1_000_000)),
    ("search-since-2-63", lambda m, i: m.search("x", since=2**63 + 5)),
    ("context-budget-0", lambda m, i: m.context(i["sid"], budget_tokens=0)),
    ("context-budget-negative", lambda m, i: m.context(i["sid"], budget_tokens=-1)),
    ("context-budget-inf", lambda m, i: m.context(i["sid"], budget_tokens=math.inf)),
    ("context-unknown", lambda m, i: m.context("sess-nope")),
    ("as-of-garbage", lambda m, i: m.as_of("garbage")),
    ("as-of-after-head", lambda m, i: m.as_of(2**63 + 5)),
    ("as-of-negative", lambda m, i: m.as_of("@-1")),
    ("as-of-year-10000", lambda m, i: m.as_of("10000-01-01T00:00:00Z")),
    ("history-unknown", lambda m, i: m.history("nope")),
    ("show-unknown", lambda m, i: m.show("msg-nope")),
    ("read-session-unknown", lambda m, i: m.session("sess-nope")),
]

LIB_FORGETTING: list[tuple[str, Call]] = [
    ("delete-nothing", lambda m, i: m.delete(reason="r", requested_by="me")),
    ("delete-empty-reason", lambda m, i: m.delete(ids=[i["mid"]], reason="", requested_by="me")),
    ("delete-bad-requester", lambda m, i: m.delete(ids=[i["mid"]], reason="r", requested_by="a b")),
    ("delete-ids-string", lambda m, i: m.delete(ids=i["mid"], reason="r", requested_by="me")),
    ("delete-garbage-before", lambda m, i: m.delete(before="garbage", reason="r", requested_by="me")),
    ("delete-before-2-63", lambda m, i: m.delete(before=2**63 + 5, reason="r", requested_by="me")),
    ("delete-bad-kind", lambda m, i: m.delete(kinds=["bogus"], reason="r", requested_by="me")),
    ("redact-backreference", lambda m, i: m.redact(i["mid"], regex=r"(\w)\1", reason="r", requested_by="me")),
    ("redact-lookahead", lambda m, i: m.redact(i["mid"], regex="(?!x)h", reason="r", requested_by="me")),
    ("redact-redos", lambda m, i: m.redact(i["mid"], regex="(a+)+$", reason="r", requested_by="me")),
    ("redact-bad-pattern", lambda m, i: m.redact(i["mid"], patterns=["bogus"], reason="r",
                                                 requested_by="me")),
    ("redact-unknown", lambda m, i: m.redact("msg-nope", reason="r", requested_by="me")),
    ("retention-negative", lambda m, i: m.retention(days={"message": -1})),
    ("retention-huge", lambda m, i: m.retention(days={"message": 2**70})),
    ("retention-bad-kind", lambda m, i: m.retention(days={"bogus": 1})),
    ("retention-bool", lambda m, i: m.retention(days={"message": True})),
    ("retention-garbage", lambda m, i: m.retention(as_of="garbage")),
    ("decay-rate-inf", lambda m, i: m.apply_decay(rates={"message": math.inf})),
    ("decay-rate-nan", lambda m, i: m.apply_decay(rates={"message": math.nan})),
    ("decay-rate-negative", lambda m, i: m.apply_decay(rates={"message": -1})),
    ("decay-rate-bool", lambda m, i: m.apply_decay(rates={"message": True})),
    ("decay-rate-bad-kind", lambda m, i: m.apply_decay(rates={"bogus": 1})),
    ("decay-floor-nan", lambda m, i: m.apply_decay(floor=math.nan)),
    ("decay-floor-2", lambda m, i: m.apply_decay(floor=2)),
    ("decay-as-of-2-63", lambda m, i: m.apply_decay(as_of=2**63 + 5)),
]


def _open(path: str, **kw: Any) -> Call:
    return lambda m, i: MemoryLog.open(_fill(path, i), **kw).close()


LIB_OPEN: list[tuple[str, Call]] = [
    ("open-file", _open("{file}")),
    ("open-file-read", _open("{file}", create=False)),
    ("open-devnull", _open("/dev/null")),
    ("open-under-file", _open("{file}/sub")),
    ("open-empty-read", _open("{empty}", create=False)),
    ("open-bad-config", _open("{badcfg}")),
    ("open-max-content-0", _open("{empty}", max_content_bytes=0)),
    ("open-shards-0", _open("{empty}", search_shards=0)),
    ("open-bad-custom-regex", _open("{empty}", custom_redactions={"x": r"(a)\1"})),
    ("open-unknown-pattern", _open("{empty}", redaction_patterns=["bogus"])),
    ("open-unknown-setting", _open("{empty}", colour="red")),
]

LIB_CASES = LIB_WRITES + LIB_UPDATES + LIB_READS + LIB_FORGETTING + LIB_OPEN


@pytest.mark.parametrize("call", [c[1] for c in LIB_CASES], ids=[c[0] for c in LIB_CASES])
def test_library_bad_input(world: World, call: Call) -> None:
    """A MemlogError, nothing written, the chain still verifies."""
    log = world.lib.log
    before = log.head().seq
    paths = {**world.lib_ids, "file": world.ids["file"], "empty": world.ids["empty"],
             "badcfg": world.ids["badcfg"]}
    with pytest.raises(MemlogError):
        call(world.lib, paths)
    assert log.head().seq == before and log.verify().ok
    assert not any((world.root / "empty").iterdir())


def test_the_matrix_is_large_enough() -> None:
    """At least 140 cases across the CLI and the library (the issue's floor)."""
    assert len(CLI_CASES) + len(LIB_CASES) >= 140
    assert len({c[0] for c in CLI_CASES}) == len(CLI_CASES)
    assert len({c[0] for c in LIB_CASES}) == len(LIB_CASES)


def test_year_9999_is_still_accepted(tmp_path: Path) -> None:
    """The range check stops after year 9999, not before: its last second is a valid time."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        eid = mem.add_message(sid, role="user", content="x", occurred_at="9999-12-31T23:59:59Z")
        assert mem.show(eid).occurred_at.startswith("9999-12-31T23:59:59")
    assert datetime(9999, 12, 31, tzinfo=UTC).year == 9999
