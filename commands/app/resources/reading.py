"""Reading a resource: its spec (declared by a call or in ``config.toml``) and
its live items, resolved from the views."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from eventstore import SHOWN_STATES, InvalidInputError, ResourceSpec, format_micros
from projections import EntryView, ResourceItem, ViewReader

from .policy import Item
from .spec import check_spec, instance_key, key_fields

__all__ = ["ResourceMessage", "find_spec", "live_items", "specs", "stored_key", "to_message", "token_count"]

# A user id's pseudonym (commands.app.store.pseudonym), or None when the store has none.
Alias = Callable[[str], str | None]


def stored_key(views: ViewReader, spec: ResourceSpec, values: Mapping[str, str | None], alias: Alias) -> str:
    """The key an instance is stored under: its template filled with ``values``,
    ``{user_id}`` as the user's pseudonym, so that the log's stream names and
    events never hold a user id an erasure must take. An instance that a store
    written before pseudonyms holds under the plain id keeps that key."""
    user = values.get("user_id")
    plain = instance_key(spec, values)
    if user is None or "user_id" not in key_fields(spec.key):
        return plain
    name = alias(user)
    if name is None:
        return plain
    key = instance_key(spec, {**values, "user_id": name})
    if views.resource_state(key) is None and views.resource_state(plain) is not None:
        return plain
    return key


def token_count(text: str) -> int:
    """Seed 002's estimate, as the context builder counts: characters / 4, rounded up."""
    return -(-len(text) // 4)


class ResourceMessage(msgspec.Struct, frozen=True):
    """One item of a resource as read: the entry that holds it (a ``message``,
    or a ``summary`` a flush wrote), its block and tokens."""

    id: str
    kind: str
    role: str | None
    content: str
    block: str
    tokens: int
    occurred_at: str
    derived_from: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``resource read --json`` shape."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


def specs(configured: Iterable[ResourceSpec], views: ViewReader) -> dict[str, ResourceSpec]:
    """Every resource by id: ``config.toml``'s, replaced by a declaration of the same id."""
    out = {s.id: s for s in configured}
    out.update((s.id, s) for s in views.resource_specs())
    return out


def find_spec(configured: Iterable[ResourceSpec], views: ViewReader, resource_id: object) -> ResourceSpec:
    """The spec of ``resource_id`` (a declaration wins over ``config.toml``)."""
    if not isinstance(resource_id, str):
        raise InvalidInputError("resource id must be a string")
    declared = views.resource_spec(resource_id)
    if declared is not None:
        return declared
    for spec in configured:
        if spec.id == resource_id:
            return check_spec(spec)
    raise InvalidInputError(f"no resource {resource_id} is declared (declare it, or add it to config.toml)")


def live_items(views: ViewReader, key: str, spec: ResourceSpec,
               now: int | None) -> list[tuple[ResourceItem, EntryView]]:
    """The resource's items in order whose entries are shown (not deleted), and
    (with ``now``) not older than the TTL."""
    state = views.resource_state(key)
    if state is None or not state.items:
        return []
    found = views.entries([i.entry_id for i in state.items])
    cutoff = None if now is None or spec.ttl_seconds is None else now - spec.ttl_seconds * 1_000_000
    out = []
    for item, view in zip(state.items, found, strict=True):
        if view is None or view.entry is None or view.state not in SHOWN_STATES:
            continue
        if cutoff is not None and view.entry.occurred_at < cutoff:
            continue
        out.append((item, view))
    return out


def to_message(item: ResourceItem, view: EntryView) -> ResourceMessage:
    """The read shape of one item."""
    entry = view.entry
    assert entry is not None
    return ResourceMessage(item.entry_id, entry.kind, entry.role, entry.content, item.block,
                           token_count(entry.content), format_micros(entry.occurred_at),
                           entry.derived_from)


def to_item(item: ResourceItem, view: EntryView) -> Item:
    """The policy's view of one item."""
    assert view.entry is not None
    return Item(item.entry_id, item.block, token_count(view.entry.content), view.entry.occurred_at)
