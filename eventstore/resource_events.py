"""The events of memory resources (seed 003), part of the catalogue of
:mod:`eventstore.events` (which re-exports them and lists them in ``Event``).

A resource's items are ``entry.recorded`` events (content, erasable as any
entry); these events hold ids, names and counts, never content.
"""

from __future__ import annotations

import msgspec

from .fields import Count, Id, Label
from .specs import BlockName, ResourceId, ResourceKey, ResourceSpec

__all__ = [
    "ResourceAppended",
    "ResourceDeclared",
    "ResourceEvicted",
    "ResourceFlushed",
    "ResourceReplaced",
    "ResourceTrimmed",
]


class ResourceDeclared(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="resource.declared"):
    """A memory resource was declared (or declared again, replacing its spec)."""

    spec: ResourceSpec


class ResourceAppended(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="resource.appended"):
    """An entry (recorded in the same append) joined a resource's block, at its end."""

    resource_id: ResourceId
    key: ResourceKey
    entry_id: Id
    block: BlockName


class ResourceFlushed(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="resource.flushed"):
    """A block's oldest items were folded into one summary item (recorded in the same append)."""

    resource_id: ResourceId
    key: ResourceKey
    block: BlockName
    removed_entry_ids: tuple[Id, ...]
    summary_entry_id: Id
    tokens_before: Count
    tokens_after: Count


class ResourceEvicted(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="resource.evicted"):
    """Items left a resource (reason: ``priority``, ``block_budget`` or ``ttl``)."""

    # priority: over the limit, the least important block first; block_budget:
    # a block over its budget, its oldest first; ttl: older than the TTL.

    resource_id: ResourceId
    key: ResourceKey
    removed_entry_ids: tuple[Id, ...]
    reason: Label
    tokens_before: Count
    tokens_after: Count


class ResourceTrimmed(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="resource.trimmed"):
    """A resource was trimmed to its newest items (by count or tokens)."""

    resource_id: ResourceId
    key: ResourceKey
    removed_entry_ids: tuple[Id, ...]
    tokens_before: Count
    tokens_after: Count


class ResourceReplaced(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="resource.replaced"):
    """Every item left a resource; the new items follow as ``resource.appended``."""

    resource_id: ResourceId
    key: ResourceKey
    removed_entry_ids: tuple[Id, ...]
