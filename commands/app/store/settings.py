"""Settings: one frozen struct, from ``<dir>/config.toml``, ``MEMLOG_*`` and the caller.

Precedence, lowest first: defaults, ``<dir>/config.toml``, ``MEMLOG_*``
environment variables, then explicit overrides (CLI options or keyword
arguments). Nothing is read at import time.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from eventstore import InvalidInputError, ResourceSpec

from ..resources.spec import check_specs
from .redaction import PATTERNS, compile_regex

__all__ = ["DEFAULT_CONTEXT_SHARES", "DEFAULT_RETENTION_DAYS", "Settings", "check_settings", "load_settings",
           "merged", "policy"]

# Seed 000's per-kind retention, seed 001's 90 days for the rest.
DEFAULT_RETENTION_DAYS = {
    "message": 90, "decision": 365, "finding": 180, "preference": 730,
    "lesson": 365, "task": 180, "handoff": 90, "summary": 365, "project": 3650,
}

# The share of a context budget kept for each section (commands.app.recall.context): with a
# query, 60 % for the best matches of the user's earlier messages and memories.
DEFAULT_CONTEXT_SHARES = {
    "project": 0.0, "memories": 0.0, "preferences": 0.0, "handoff": 0.0, "recall": 0.6,
    "decisions": 0.0, "lessons": 0.0, "findings": 0.0, "tasks": 0.0, "recovery": 0.0,
    "summary": 0.0, "messages": 0.0,
}


class Settings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Everything configurable, with seed defaults."""

    max_content_bytes: int = 1 << 20
    redact_on_ingest: bool = True
    redaction_patterns: tuple[str, ...] = tuple(PATTERNS)
    custom_redactions: dict[str, str] = {}
    record_access: bool = True
    search_shards: int | None = None  # None: fitted to the store (1 to 32, by log size); N: fixed
    context_budget_tokens: int = 2000
    max_context_messages: int = 20
    max_user_memories: int = 50
    context_shares: dict[str, float] = msgspec.field(default_factory=lambda: dict(DEFAULT_CONTEXT_SHARES))
    retention_days: dict[str, int] = msgspec.field(default_factory=lambda: dict(DEFAULT_RETENTION_DAYS))
    sync: bool = True
    default_actor: str = "memlog"
    semantic: bool = True  # vectors and hybrid search when an embedder is installed (numpy)
    # compaction and summaries
    session_limit_bytes: int = 10 * 1024 * 1024  # seed 000: a session's live content bytes
    compact_at: float = 0.9  # compact when a session reaches this share of its limit (9 MB)
    compact_keep: float = 0.8  # keep the most relevant entries, up to this share of its bytes
    auto_compact: bool = True  # check on every write to a session
    summary_threshold_tokens: int = 8000  # seed 001: summarise past this many message tokens
    summary_keep_messages: int = 10  # ... keeping the last 10 messages verbatim
    auto_summarise: bool = True  # check on every message
    resummarise_on_delete: bool = True  # a summary deleted with a source is written again
    summary_input_chars: int = 256 * 1024  # the most a summariser is given (about 64k tokens)
    # memory resources
    # ``[[resources]]`` tables of config.toml (see docs/lifecycle.md (Memory resources)); a
    # declaration by a call (``resource.declared``) replaces one of the same id.
    resources: tuple[ResourceSpec, ...] = ()
    # formation
    # seed 004: a new lesson whose word set has Jaccard >= this with a live lesson of its
    # scope reinforces that lesson instead (0 turns dedup off; 1.0: identical word sets only)
    lesson_dedup_threshold: float = 0.8
    handoff_on_close: bool = True  # seed 002: close writes a handoff from the last 6 messages
    extract_on_close: bool = True  # ... and extracts decisions and lessons (the rules of seed 002)
    # upkeep: 0 disables each threshold
    checkpoint_valid_days: int = 7  # seed 002: recover ignores an older checkpoint (0: never expires)
    lesson_limit: int = 500  # seed 004: the most lessons a scope keeps, the oldest going first
    ephemeral_max_age_hours: int = 48  # seed 004: an ephemeral session idle this long is deleted
    ephemeral_max_count: int = 500  # seed 004: past this many ephemeral sessions, the oldest go
    archive_idle_days: int = 30  # seed 000: a session idle this long is archived
    auto_restore: bool = True  # seed 000: a write or read naming an archived session restores it
    # -- agents and the small fields --
    memory_instruction: bool = True  # seed 002: the context block ends with how to save to memory
    search_deadline_ms: int = 0  # a search taking longer fails with E_QUERY_TIMEOUT (0: no limit)


# The tables whose keys are fixed and whose defaults a partial table keeps.
_TABLES: dict[str, dict[str, Any]] = {"retention_days": DEFAULT_RETENTION_DAYS,
                                      "context_shares": DEFAULT_CONTEXT_SHARES}

_ENV_TYPES: dict[str, type] = {
    "max_content_bytes": int, "redact_on_ingest": bool, "record_access": bool,
    "search_shards": int, "context_budget_tokens": int, "max_context_messages": int,
    "max_user_memories": int, "sync": bool, "default_actor": str,
    "semantic": bool, "memory_instruction": bool, "search_deadline_ms": int,
}


def load_settings(data_dir: Path | None, overrides: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """Build settings from ``config.toml``, ``MEMLOG_*`` and ``overrides``."""
    values: dict[str, Any] = {}
    if data_dir is not None and (data_dir / "config.toml").is_file():
        try:
            values.update(tomllib.loads((data_dir / "config.toml").read_text()))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"config.toml is not valid TOML: {exc}") from None
    env = os.environ if environ is None else environ
    for name, kind in _ENV_TYPES.items():
        raw = env.get(f"MEMLOG_{name.upper()}")
        if raw is not None:
            values[name] = _parse_env(name, raw, kind)
    values.update(overrides or {})
    try:
        settings = msgspec.convert(merged(values), Settings)
    except msgspec.ValidationError as exc:
        raise InvalidInputError(f"invalid setting: {exc}") from None
    check_settings(settings)
    return settings


def merged(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` over the defaults, table by table: a partial table (``[retention_days]``
    naming only ``message``) overrides the keys it names and keeps the others'
    defaults. An unknown setting, or an unknown key of a table whose keys are
    fixed, is refused naming it."""
    unknown = sorted(set(values) - set(Settings.__struct_fields__))
    if unknown:
        raise InvalidInputError(f"unknown setting: {', '.join(unknown)}")
    out = dict(values)
    for name, fixed in _TABLES.items():
        given = out.get(name)
        if not isinstance(given, Mapping):
            continue  # msgspec refuses a table that is not one
        strange = sorted(set(given) - set(fixed))
        if strange:
            raise InvalidInputError(f"unknown key in [{name}]: {', '.join(map(str, strange))} "
                                    f"(known: {', '.join(fixed)})")
        out[name] = {**fixed, **given}
    return out


def policy(settings: Settings) -> dict[str, Any]:
    """The settings in force, as builtins (what ``memlog config show`` prints)."""
    data: dict[str, Any] = msgspec.to_builtins(settings)
    return data


def _parse_env(name: str, raw: str, kind: type) -> Any:
    if kind is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise InvalidInputError(f"MEMLOG_{name.upper()} must be true or false")
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise InvalidInputError(f"MEMLOG_{name.upper()} must be an integer") from None
    return raw


def check_settings(settings: Settings) -> None:
    """Refuse settings out of range, unknown patterns and custom regexes the
    linear-time engine does not accept (before anything is opened)."""
    if not 1 <= settings.max_content_bytes <= 64 << 20:
        raise InvalidInputError("max_content_bytes must be between 1 and 64 MiB")
    if settings.search_shards is not None and not 1 <= settings.search_shards <= 64:
        raise InvalidInputError("search_shards must be between 1 and 64")
    if settings.context_budget_tokens < 50:
        raise InvalidInputError("context_budget_tokens must be at least 50")
    shares = settings.context_shares.values()
    if not all(0 <= v <= 1 for v in shares) or sum(shares) > 1 + 1e-9:
        raise InvalidInputError("context_shares must be from 0 to 1 each and at most 1 together")
    unknown = set(settings.redaction_patterns) - set(PATTERNS)
    if unknown:
        raise InvalidInputError(f"unknown redaction patterns: {', '.join(sorted(unknown))}")
    for name, regex in settings.custom_redactions.items():
        compile_regex(name, regex)
    # compaction and summaries
    if settings.session_limit_bytes < 1024:
        raise InvalidInputError("session_limit_bytes must be at least 1024")
    if not 0 < settings.compact_keep < settings.compact_at <= 1:
        raise InvalidInputError("compaction needs 0 < compact_keep < compact_at <= 1")
    if settings.summary_input_chars < 1000:
        raise InvalidInputError("summary_input_chars must be at least 1000")
    if settings.summary_threshold_tokens < 1 or settings.summary_keep_messages < 0:
        raise InvalidInputError("summary_threshold_tokens must be positive and "
                                "summary_keep_messages not negative")
    # memory resources
    check_specs(settings.resources)
    # formation
    if not 0 <= settings.lesson_dedup_threshold <= 1:
        raise InvalidInputError("lesson_dedup_threshold must be between 0 (off) and 1")
    # upkeep
    for name in ("checkpoint_valid_days", "lesson_limit", "ephemeral_max_age_hours", "ephemeral_max_count",
                 "archive_idle_days"):
        value = getattr(settings, name)
        if not 0 <= value <= 1_000_000_000:
            raise InvalidInputError(f"{name} must be an integer from 0 (off) to 1000000000")
    if not 0 <= settings.search_deadline_ms <= 3_600_000:
        raise InvalidInputError("search_deadline_ms must be from 0 (no deadline) to 3600000")
