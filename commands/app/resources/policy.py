"""What a resource must do after a change, decided purely (no I/O, no clock):
which items expired, which block flushes, which items are evicted.

The rules (seed 003):

1. **TTL.** Items older than ``ttl_seconds`` (by the time they were recorded)
   leave the resource (``resource.evicted``, reason ``ttl``).
2. **Flush.** A block whose tokens reach ``flush_threshold`` x its budget
   flushes; so does, when the whole resource reaches ``flush_threshold`` x
   its limit, its least important block that holds 2 items or more. A flush
   folds the block's oldest ``flush_fraction`` of items (at least 2; none when
   the block holds fewer) into one summary item, through the summariser
   (``resource.flushed``). At most one flush per change; a ``flush_fraction``
   of 0 turns flushing off.
3. **Eviction.** A block over its budget loses its oldest items (reason
   ``block_budget``); then, while the resource is over its limit, the oldest
   item of its least important non-empty block goes (the largest priority
   number first; reason ``priority``).

A block's budget is the lower of ``ratio`` x limit and ``max_tokens``
(:func:`~commands.app.resources.spec.block_budgets`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from eventstore import ResourceSpec

from .spec import block_budgets, blocks_of

__all__ = ["Item", "Removal", "expired", "plan_evictions", "plan_flush", "total"]


@dataclass(frozen=True)
class Item:
    """One item as the policy sees it: id, block, tokens, when it was recorded (µs)."""

    entry_id: str
    block: str
    tokens: int
    at: int


@dataclass(frozen=True)
class Removal:
    """Items to remove and why."""

    reason: str
    entry_ids: tuple[str, ...]


def total(items: Sequence[Item]) -> int:
    """The items' tokens."""
    return sum(i.tokens for i in items)


def expired(items: Sequence[Item], spec: ResourceSpec, now: int) -> tuple[str, ...]:
    """Ids of the items older than the TTL at ``now``."""
    if spec.ttl_seconds is None:
        return ()
    cutoff = now - spec.ttl_seconds * 1_000_000
    return tuple(i.entry_id for i in items if i.at < cutoff)


def _by_least_important(spec: ResourceSpec) -> list[str]:
    """Block names, the least important (largest priority number) first, then declaration order."""
    blocks = list(blocks_of(spec))
    return [b.name for b in sorted(blocks, key=lambda b: (-b.priority, blocks.index(b)))]


def plan_flush(items: Sequence[Item], spec: ResourceSpec) -> tuple[str, tuple[str, ...]] | None:
    """The block to flush and the ids of its oldest items to fold, or None."""
    if spec.flush_fraction <= 0:
        return None
    budgets = block_budgets(spec)
    order = _by_least_important(spec)
    per_block = {name: [i for i in items if i.block == name] for name in order}
    target = next((name for name in order if len(per_block[name]) >= 2
                   and total(per_block[name]) >= spec.flush_threshold * budgets[name]), None)
    if target is None and total(items) >= spec.flush_threshold * spec.token_limit:
        target = next((name for name in order if len(per_block[name]) >= 2), None)
    if target is None:
        return None
    chosen = per_block[target]
    n = max(2, math.floor(len(chosen) * spec.flush_fraction))
    return target, tuple(i.entry_id for i in chosen[:n])


def plan_evictions(items: Sequence[Item], spec: ResourceSpec) -> list[Removal]:
    """The evictions that bring every block within its budget, then the resource within its limit."""
    budgets = block_budgets(spec)
    left = list(items)
    out: list[Removal] = []
    over_budget: list[str] = []
    for name in _by_least_important(spec):
        mine = [i for i in left if i.block == name]
        while mine and total(mine) > budgets[name]:
            over_budget.append(mine.pop(0).entry_id)
    if over_budget:
        out.append(Removal("block_budget", tuple(over_budget)))
        gone = set(over_budget)
        left = [i for i in left if i.entry_id not in gone]
    by_priority: list[str] = []
    order = _by_least_important(spec)
    while left and total(left) > spec.token_limit:
        name = next(n for n in order if any(i.block == n for i in left))
        victim = next(i for i in left if i.block == name)
        by_priority.append(victim.entry_id)
        left.remove(victim)
    if by_priority:
        out.append(Removal("priority", tuple(by_priority)))
    return out
