"""Seed 000's ``.bmad/memory`` tree: ``sessions/{id}/manifest.json`` with
``conversation``, ``decisions``, ``findings`` and ``preferences`` JSONL beside
it, and ``shared/user-preferences.json`` (preferences across sessions).

The path may name the project root, its ``.bmad`` or the ``memory`` directory.
``index.json``, ``config.json`` and ``agent-knowledge.json`` are derived or
unspecified and are not read; ``decay_factor`` is not kept (memlog computes
decay from its own parameters).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .model import (
    Bad,
    EntryRec,
    Origin,
    Record,
    SessionRec,
    derived_id,
    event_id,
    line_of,
    load_json,
    read_jsonl,
    session_id_for,
    source_time,
)

__all__ = ["FORMAT", "read"]

FORMAT = "bmad"
_FILES = ("conversation", "decisions", "findings", "preferences")


def root_of(path: Path) -> Path:
    """The ``memory`` directory a path names."""
    for candidate in (path / ".bmad" / "memory", path / "memory", path):
        if (candidate / "sessions").is_dir() or (candidate / "shared").is_dir():
            return candidate
    raise FileNotFoundError(f"no .bmad/memory tree (sessions/ or shared/) under {path}")


def read(path: Path) -> list[Record]:
    """Every record of the tree, sessions first within each session directory."""
    root = root_of(path)
    out: list[Record] = []
    sessions = root / "sessions"
    if sessions.is_dir():
        for folder in sorted(p for p in sessions.iterdir() if p.is_dir()):
            out.extend(_session(root, folder))
    shared = root / "shared" / "user-preferences.json"
    if shared.is_file():
        out.extend(_shared_preferences(root, shared))
    return out


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _session(root: Path, folder: Path) -> list[Record]:
    manifest_path = folder / "manifest.json"
    origin = Origin(_rel(root, manifest_path), 0)
    manifest: Any = {}
    out: list[Record] = []
    if not manifest_path.is_file():
        out.append(Bad(origin, "manifest.json is missing"))
    else:
        manifest = load_json(manifest_path, origin.file)
        if isinstance(manifest, Bad):
            out.append(manifest)
            manifest = {}
        elif not isinstance(manifest, dict):
            out.append(Bad(origin, "the manifest must be a JSON object"))
            manifest = {}
    sid = session_id_for(FORMAT, manifest.get("session_id") or folder.name)
    if manifest:
        out.append(_manifest(Origin(origin.file, line_of(manifest, 1)), sid, manifest))
    user = manifest.get("user_id")
    for name in _FILES:
        path = folder / f"{name}.jsonl"
        if path.is_file():
            for where, obj, reason in read_jsonl(path, _rel(root, path)):
                out.append(Bad(where, reason) if obj is None else _record(name, where, sid, user, obj))
    return out


def _manifest(origin: Origin, sid: str, manifest: dict[str, Any]) -> SessionRec:
    meta = manifest.get("metadata") or {}
    tags: Any = ()
    metadata: dict[str, str] = {}
    if isinstance(meta, dict):
        tags = meta.get("tags") or ()
        metadata = {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items() if k != "tags"}
    if isinstance(manifest.get("created_at"), str):
        metadata["created_at"] = manifest["created_at"]
    return SessionRec(origin, event_id(FORMAT, f"session:{sid}"), sid, user_id=manifest.get("user_id"),
                      agent_ids=manifest.get("agent_ids") or (), tags=tags, metadata=metadata,
                      archived=bool(manifest.get("archived_at")))


def _ref(sid: str, kind: str, folder: str, source: object) -> str:
    return derived_id(FORMAT, kind, f"{sid}/{folder}/{source}")


def _record(name: str, origin: Origin, sid: str, user: object, obj: dict[str, Any]) -> Record:
    kind = {"conversation": "message", "decisions": "decision", "findings": "finding",
            "preferences": "preference"}[name]
    source = f"{sid}/{name}/{obj.get('id', f'line-{origin.line}')}"
    common: dict[str, Any] = {
        "origin": origin, "event_id": event_id(FORMAT, source), "entry_id": derived_id(FORMAT, kind, source),
        "kind": kind, "session_id": sid, "occurred_at": source_time(obj.get("timestamp")),
        "tags": obj.get("tags") or (),
    }
    if kind == "message":
        return _message(common, sid, obj)
    if kind == "decision":
        return _decision(common, sid, obj)
    if kind == "finding":
        return EntryRec(**common, content=obj.get("description"), agent_id=obj.get("discovered_by"),
                        details={k: obj.get(k) for k in ("severity", "category", "evidence",
                                                        "recommendation", "status")})
    if user is None:
        return Bad(origin, "a preference needs the manifest's user_id")
    return preference(common, user, obj)


def _message(common: dict[str, Any], sid: str, obj: dict[str, Any]) -> EntryRec:
    found = obj.get("context")
    context: dict[str, Any] = found if isinstance(found, dict) else {}
    parent = context.get("parent_message_id")
    details = {"topic": context.get("topic"), "conversation_id": context.get("conversation_id"),
               "parent_id": None if parent is None else _ref(sid, "message", "conversation", parent)}
    return EntryRec(**common, content=obj.get("content"), role=obj.get("role"),
                    agent_id=obj.get("agent_id"), details=details)


def _decision(common: dict[str, Any], sid: str, obj: dict[str, Any]) -> EntryRec:
    alternatives = obj.get("alternatives_considered") or obj.get("alternatives") or ()
    if isinstance(alternatives, list):
        alternatives = [_alternative(a) for a in alternatives]
    found = obj.get("references")
    refs: dict[str, Any] = found if isinstance(found, dict) else {}
    derived = [_ref(sid, "message", "conversation", r) for r in refs.get("conversations") or ()]
    derived += [_ref(sid, "finding", "findings", r) for r in refs.get("findings") or ()]
    details = {"rationale": obj.get("rationale"), "alternatives": alternatives, "impact": obj.get("impact"),
               "made_by": obj.get("made_by"), "approved_by": obj.get("approved_by") or ()}
    return EntryRec(**common, content=obj.get("decision"), agent_id=obj.get("made_by"),
                    derived_from=derived, details=details)


def _alternative(value: object) -> object:
    """``{"option": "MongoDB", "rejected_reason": "..."}`` as one line of text."""
    if isinstance(value, dict) and isinstance(value.get("option"), str):
        reason = value.get("rejected_reason")
        return f"{value['option']}: rejected, {reason}" if isinstance(reason, str) else value["option"]
    return value


def preference(common: dict[str, Any], user: object, obj: dict[str, Any]) -> EntryRec:
    """A seed 000 preference (``key``, ``value``, ``category``, ``confidence``)."""
    key, value = obj.get("key"), obj.get("value")
    if value is not None and not isinstance(value, str):
        value = json.dumps(value)
    content = f"{key.strip()}: {value}" if isinstance(key, str) else None
    return EntryRec(**common, content=content, user_id=user,
                    details={"key": key, "value": value, "category": obj.get("category"),
                             "confidence": obj.get("confidence")})


def _shared_preferences(root: Path, path: Path) -> list[Record]:
    """``shared/user-preferences.json``: a list of preferences that carry a
    ``user_id``, ``{"user_id": ..., "preferences": [...]}``, or a mapping of
    user ids to lists of preferences."""
    rel = _rel(root, path)
    doc = load_json(path, rel)
    if isinstance(doc, Bad):
        return [doc]
    groups: list[tuple[object, object]] = []
    if isinstance(doc, list):
        groups = [(None, doc)]
    elif isinstance(doc, dict) and "preferences" in doc:
        groups = [(doc.get("user_id"), doc["preferences"])]
    elif isinstance(doc, dict):
        groups = list(doc.items())
    out: list[Record] = []
    for user, prefs in groups:
        if not isinstance(prefs, list):
            out.append(Bad(Origin(rel, line_of(prefs)), "preferences must be a list"))
            continue
        for n, obj in enumerate(prefs):
            out.append(_shared_one(rel, user, n, obj))
    return out


def _shared_one(rel: str, user: object, n: int, obj: object) -> Record:
    origin = Origin(rel, line_of(obj))
    if not isinstance(obj, dict):
        return Bad(origin, "a preference must be a JSON object")
    uid = obj.get("user_id", user)
    if uid is None:
        return Bad(origin, "a shared preference needs a user_id")
    source = f"shared/{uid}/{obj.get('id', obj.get('key', n))}"
    common = {"origin": origin, "event_id": event_id(FORMAT, source),
              "entry_id": derived_id(FORMAT, "preference", source), "kind": "preference",
              "occurred_at": source_time(obj.get("timestamp")), "tags": obj.get("tags") or ()}
    return preference(common, uid, obj)
