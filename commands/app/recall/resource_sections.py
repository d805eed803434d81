"""The resources' blocks in the context builder, with their allocation ratios.

For a session, every resource whose key template can be filled from the
session (its id, its user, and its agent when it has exactly one) adds one
section per block that holds items, but nothing of another user: in the
context of a session with a user, a resource whose key names neither the
user nor the session (an agent's, or one for everyone: items of any user's
turns may be in it) joins only when it is declared ``shared``.

The resource may take ``context_ratio`` of the context budget; each block
takes the lower of ``ratio`` x that share and its ``max_tokens`` (a block
with neither: the whole share). A block's section keeps its newest items
that fit its allocation (title included), so under a tight budget the
blocks keep their ratios; the fitting then trims them only after every
other section but the handoff.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from eventstore import InvalidInputError, ResourceSpec
from projections import SessionView, ViewReader

from ..resources.reading import Alias, live_items, specs, stored_key
from ..resources.spec import block_budgets, blocks_of, key_fields
from .fitting import Section

__all__ = ["resource_sections", "session_values"]


def session_values(session: SessionView) -> dict[str, str | None]:
    """The key fields a session fills: its id, its user, its one agent."""
    agents = session.agent_ids
    return {"session_id": session.session_id, "user_id": session.user_id,
            "agent_id": agents[0] if len(agents) == 1 else None}


def resource_sections(configured: Iterable[ResourceSpec], views: ViewReader, session: SessionView,
                      budget: int, count: Callable[[str], int], now: int | None,
                      alias: Alias) -> list[Section]:
    """One section per non-empty block of every resource the session fills, newest
    items that fit; ``alias`` gives a user id's pseudonym (:func:`.reading.stored_key`)."""
    out: list[Section] = []
    values = session_values(session)
    for spec in specs(configured, views).values():
        if session.user_id and not (spec.shared or _owned(spec)):
            continue
        try:
            key = stored_key(views, spec, values, alias)
        except InvalidInputError:
            continue
        items = live_items(views, key, spec, now)
        if not items:
            continue
        share = math.floor(spec.context_ratio * budget)
        allowed = block_budgets(spec, share)
        for block in blocks_of(spec):
            texts = [_line(v.entry.role if v.entry else None, v.entry.content if v.entry else "")
                     for item, v in reversed(items) if item.block == block.name]
            section = Section(f"resource:{spec.id}:{block.name}", f"{spec.id} / {block.name}:", [],
                              chronological=True)
            for text in texts:  # newest first, while the allocation holds
                section.items.append(text)
                if count(section.text()) > allowed[block.name]:
                    section.items.pop()
                    section.removed = len(texts) - len(section.items)
                    break
            if section.items:
                out.append(section)
    return out


def _owned(spec: ResourceSpec) -> bool:
    """Whether every instance of ``spec`` is one user's or one session's (its key names either)."""
    fields = key_fields(spec.key)
    return "user_id" in fields or "session_id" in fields


def _line(role: str | None, content: str) -> str:
    return f"[{role or 'summary'}]: {' '.join(content.split())}"
