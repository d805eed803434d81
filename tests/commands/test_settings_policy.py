"""Settings merge with the defaults, and an update changes no session's state.

A partial ``[retention_days]`` table overrides only the kinds it names, so a
400-day-old decision is still due; an unknown setting or table key is refused
naming it, before anything is written; ``config show`` prints the policy in
force; ``session update`` on an archived session leaves it archived.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from commands import MemoryLog, load_settings
from eventstore import InvalidInputError

from .conftest import Run, head_of


def _config(store: Path, text: str) -> None:
    store.mkdir(parents=True, exist_ok=True)
    (store / "config.toml").write_text(text)


def test_a_partial_retention_table_keeps_the_other_defaults(run: Run, store: Path) -> None:
    _config(store, "[retention_days]\nmessage = 30\n")
    old = (datetime.now(UTC) - timedelta(days=400)).isoformat()
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        decision = mem.record_decision(sid, decision="use postgres", occurred_at=old)
        message = mem.add_message(sid, role="user", content="hello", occurred_at=old)
        fresh = mem.record_decision(sid, decision="use redis")
        assert mem.settings.retention_days["decision"] == 365
        assert mem.settings.retention_days["message"] == 30
    code, due, err = run("retention", "--dry-run")
    assert code == 0, err
    assert {decision, message} <= set(due["ids"]) and fresh not in due["ids"]


@pytest.mark.parametrize(("text", "named"), [
    ("[retention_days]\nmesage = 30\n", "mesage"),
    ("retension_days = 3\n", "retension_days"),
])
def test_an_unknown_key_is_refused_naming_it(run: Run, store: Path, text: str, named: str) -> None:
    _config(store, text)
    with pytest.raises(InvalidInputError, match=named):
        load_settings(store)
    code, _, err = run("init")
    assert code == 2 and "E_SCHEMA_INVALID" in err and named in err
    assert head_of(store) == 0  # nothing written


def test_config_show_prints_the_policy_in_force(run: Run, store: Path) -> None:
    _config(store, "context_budget_tokens = 900\n[retention_days]\ntask = 7\n")
    code, shown, err = run("config", "show")
    assert code == 0, err
    assert shown["context_budget_tokens"] == 900
    assert shown["retention_days"]["task"] == 7 and shown["retention_days"]["decision"] == 365
    code, text, err = run("config", "show", as_json=False)
    assert code == 0 and "task = 7" in text and "decision = 365" in text


def test_updating_an_archived_session_leaves_it_archived(run: Run, store: Path) -> None:
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="hello")
        mem.archive_session(sid)
    code, _, err = run("session", "update", sid, "--tag", "x")
    assert code == 0, err
    with MemoryLog.open(store) as mem:
        found = mem.session(sid)
        assert found.archived and found.tags == ("x",)
