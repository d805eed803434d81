"""Every text of an entry, in one place.

:func:`entry_texts` yields every text of an entry (content, tags and the text
fields of its details, as :data:`~eventstore.vocabulary.DETAIL_TEXT_FIELDS`
names them) and :func:`map_texts` rewrites them all. Ingest redaction,
``redact``, the search text, the purge scan's needles and history all go
through these two, so a text field added to a details struct is reached
everywhere by naming it in ``DETAIL_TEXT_FIELDS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from .events import EntryRecorded
from .vocabulary import DETAIL_TEXT_FIELDS

__all__ = ["entry_texts", "map_texts"]


def entry_texts(entry: EntryRecorded) -> Iterator[str]:
    """Every text of ``entry``: its content, its tags, then its details' texts."""
    yield entry.content
    yield from entry.tags
    details = entry.details
    if details is None:
        return
    for name in DETAIL_TEXT_FIELDS[details.__struct_config__.tag]:  # type: ignore[index]
        value = getattr(details, name)
        if isinstance(value, str):
            yield value
        elif isinstance(value, tuple):
            yield from (v for v in value if v)  # a decision's "" stands for no rejected reason


def map_texts(entry: EntryRecorded, rewrite: Callable[[str], str]) -> EntryRecorded:
    """``entry`` with every text of :func:`entry_texts` passed through ``rewrite``."""
    details = entry.details
    if details is not None:
        changes: dict[str, Any] = {}
        for name in DETAIL_TEXT_FIELDS[details.__struct_config__.tag]:  # type: ignore[index]
            value = getattr(details, name)
            if isinstance(value, str):
                changes[name] = rewrite(value)
            elif isinstance(value, tuple):
                changes[name] = tuple(rewrite(v) for v in value)
        if changes:
            details = msgspec.structs.replace(details, **changes)
    return msgspec.structs.replace(entry, content=rewrite(entry.content),
                                   tags=tuple(rewrite(t) for t in entry.tags), details=details)
