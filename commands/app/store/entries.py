"""Deciding entries: validated, redacted ``entry.recorded`` events for each kind.

Nothing here writes; the facade appends what these functions return.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping

import msgspec

from eventstore import (
    FINDING_STATUSES,
    ID_PREFIXES,
    LEVELS,
    ROLES,
    DecisionDetails,
    Details,
    EntryRecorded,
    FindingDetails,
    InvalidInputError,
    MessageDetails,
    PreferenceDetails,
    TaskDetails,
    map_texts,
    now_micros,
)

from .patterns import HASHTAG
from .redaction import Redactor
from .validate import (
    check_choice,
    check_content,
    check_id,
    check_ids,
    check_labels,
    check_unit,
    optional_text,
    to_time,
)

__all__ = ["EntryFactory", "hashtags", "new_id", "with_hashtags"]


def new_id(prefix: str) -> str:
    """A new random id such as ``dec-3f9a1c2b7d4e``."""
    return f"{prefix}-{secrets.token_hex(6)}"


def hashtags(text: str) -> tuple[str, ...]:
    """The ``#tags`` of ``text`` (seed 002's ``#(\\w+)``), without the ``#``, in
    lower case, each once; a tag longer than a label (200 characters) is left out."""
    return tuple(dict.fromkeys(t.lower() for t in HASHTAG.findall(text) if len(t) <= 200))


def with_hashtags(entry: EntryRecorded) -> EntryRecorded:
    """``entry`` with the hashtags of its content after its tags (a tag given
    already, in any case, is not added again)."""
    given = {t.lower() for t in entry.tags}
    found = tuple(t for t in hashtags(entry.content) if t not in given)
    return msgspec.structs.replace(entry, tags=entry.tags + found) if found else entry


class EntryFactory:
    """Builds entry events with seed 000's fields, applying ingest redaction."""

    def __init__(self, limit: int, redactor: Redactor | None) -> None:
        self.limit = limit
        self.redactor = redactor

    def build(self, kind: str, content: object, *, session_id: str | None = None,
              user_id: str | None = None, agent_id: str | None = None, role: str | None = None,
              tags: Iterable[object] | None = None, importance: object = None,
              occurred_at: object = None, derived_from: Iterable[object] | None = None,
              details: Details | None = None, field: str = "content",
              entry_id: str | None = None) -> EntryRecorded:
        """One validated, redacted entry (``entry_id``: given by an importer, else new);
        the ``#hashtags`` of its content join its tags (:func:`with_hashtags`)."""
        text = check_content(content, field, self.limit)
        when = to_time(occurred_at, "occurred_at")  # type: ignore[arg-type]
        entry = EntryRecorded(
            entry_id=new_id(ID_PREFIXES[kind]) if entry_id is None else check_id(entry_id, "entry id"),
            kind=kind,  # type: ignore[arg-type]
            content=text, occurred_at=now_micros() if when is None else when,
            session_id=None if session_id is None else check_id(session_id, "session id"),
            user_id=None if user_id is None else check_id(user_id, "user id"),
            agent_id=None if agent_id is None else check_id(agent_id, "agent id"),
            role=None if role is None else check_choice(role, "role", ROLES),  # type: ignore[arg-type]
            tags=check_labels(tags, "tags"), importance=check_unit(importance, "importance"),
            derived_from=check_ids(derived_from, "derived_from"), details=details,
        )
        redactor = self.redactor
        if redactor is None:
            return with_hashtags(entry)
        counts: dict[str, int] = {}
        # Every text of the entry (eventstore.entry_texts), its details and tags included.
        entry = map_texts(entry, lambda value: redactor.redact(value, counts))
        # Hashtags of the redacted content: a span the redactor removed yields no tag.
        entry = with_hashtags(entry)
        return msgspec.structs.replace(entry, redactions=counts) if counts else entry

    def message(self, topic: object = None, parent_id: object = None,
                tool_call_id: object = None) -> MessageDetails | None:
        """Message details (topic, parent, and the tool call a tool message answers)."""
        if topic is None and parent_id is None and tool_call_id is None:
            return None
        return MessageDetails(
            topic=None if topic is None else check_labels([topic], "topic")[0],
            parent_id=None if parent_id is None else check_id(parent_id, "parent id"),
            tool_call_id=None if tool_call_id is None else check_id(tool_call_id, "tool call id"),
        )

    def decision(self, rationale: object, alternatives: Iterable[object] | None, impact: object,
                 made_by: object, approved_by: Iterable[object] | None) -> DecisionDetails:
        """Decision details (seed 000); each alternative an option (a string) or
        ``{"option": ..., "rejected_reason": ...}``."""
        if isinstance(alternatives, str | Mapping):
            raise InvalidInputError("alternatives must be a list of options, not a string or an object")
        pairs = [self._alternative(a) for a in (alternatives or ())]
        reasons = tuple(r or "" for _, r in pairs)
        return DecisionDetails(
            rationale=optional_text(rationale, "rationale", self.limit),
            alternatives=tuple(o for o, _ in pairs),
            impact=None if impact is None else check_choice(impact, "impact", LEVELS),  # type: ignore[arg-type]
            made_by=None if made_by is None else check_id(made_by, "made_by"),
            approved_by=check_ids(approved_by, "approved_by"),
            rejected_reasons=reasons if any(reasons) else (),
        )

    def _alternative(self, value: object) -> tuple[str, str | None]:
        """(option, rejected reason or None) of one alternative."""
        if isinstance(value, Mapping):
            unknown = set(value) - {"option", "rejected_reason"}
            if unknown:
                raise InvalidInputError("an alternative takes only option and rejected_reason")
            return (check_content(value.get("option"), "alternative option", self.limit),
                    optional_text(value.get("rejected_reason"), "rejected_reason", self.limit))
        return check_content(value, "alternative", self.limit), None

    def finding(self, severity: object, category: object, evidence: object, recommendation: object,
                status: object) -> FindingDetails:
        """Finding details (seed 000)."""
        return FindingDetails(
            severity=None if severity is None else check_choice(severity, "severity", LEVELS),  # type: ignore[arg-type]
            category=None if category is None else check_labels([category], "category")[0],
            evidence=optional_text(evidence, "evidence", self.limit),
            recommendation=optional_text(recommendation, "recommendation", self.limit),
            status=check_choice(status, "status", FINDING_STATUSES),  # type: ignore[arg-type]
        )

    def preference(self, key: object, value: object, category: object,
                   confidence: object) -> PreferenceDetails:
        """Preference details (user scope)."""
        if not isinstance(key, str) or not key.strip() or len(key) > 200:
            raise InvalidInputError("preference key must be 1-200 characters")
        return PreferenceDetails(
            key=key.strip(), value=check_content(value, "value", self.limit),
            category=None if category is None else check_labels([category], "category")[0],
            confidence=check_unit(confidence, "confidence"),
        )

    @staticmethod
    def task() -> TaskDetails:
        """A new, open task."""
        return TaskDetails(done=False)
