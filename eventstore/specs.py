"""What a memory resource is declared with (seed 003): its spec and its
priority blocks, carried by ``resource.declared`` and read by the views."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from .fields import MAX_COUNT, Unit
from .timeutil import MAX_MICROS

__all__ = ["BlockName", "ResourceBlock", "ResourceId", "ResourceKey", "ResourceSpec", "Tokens"]

ResourceId = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_-]{0,63}\Z")]
BlockName = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,63}\Z")]
ResourceKey = Annotated[str, Meta(min_length=1, max_length=512, pattern=r"^[A-Za-z0-9._:-]+\Z")]
Tokens = Annotated[int, Meta(ge=1, le=MAX_COUNT)]


class ResourceBlock(msgspec.Struct, frozen=True, gc=False):
    """A priority block of a resource: 0 is the most important (evicted last);
    its budget is the lower of ``ratio`` x the resource's limit and ``max_tokens``."""

    name: BlockName
    priority: Annotated[int, Meta(ge=0, le=1000)] = 0
    ratio: Unit | None = None
    max_tokens: Tokens | None = None


class ResourceSpec(msgspec.Struct, frozen=True, gc=False):
    """A token-managed memory resource (seed 003): key template, limit, blocks,
    flushing, TTL and the share of a context budget it may take."""

    id: ResourceId
    key: Annotated[str, Meta(min_length=1, max_length=512)]
    token_limit: Tokens
    blocks: tuple[ResourceBlock, ...] = ()
    flush_threshold: Unit = 0.8
    flush_fraction: Unit = 0.3
    ttl_seconds: Annotated[int, Meta(ge=1, le=MAX_MICROS // 1_000_000)] | None = None
    context_ratio: Unit = 0.3
    default_block: BlockName | None = None
    # A resource whose key names neither ``{user_id}`` nor ``{session_id}`` (an
    # agent's, or one for everyone) is seen by several users: its blocks join
    # the context of a session with a user only when it is declared shared.
    # Absent from the payloads written before it (they decode as not shared).
    shared: bool = False
