"""Token-managed memory resources (seed 003): declared specs, sanitised keys,
items stored as entries, flushing, eviction and TTL as events.

The handle (:class:`~commands.app.upkeep.resources.ResourceHandle`) lives in
its own module, imported by the facade; this package face holds what the
context builder and the settings need, so importing it never imports the store.
"""

from .policy import Item, Removal, expired, plan_evictions, plan_flush
from .reading import ResourceMessage, token_count
from .spec import (
    DEFAULT_BLOCK,
    KEY_FIELDS,
    MAX_KEY,
    block_budgets,
    blocks_of,
    check_spec,
    check_specs,
    default_block,
    make_spec,
    render_key,
    sanitise_key,
    stream_of,
)

__all__ = [
    "DEFAULT_BLOCK",
    "KEY_FIELDS",
    "MAX_KEY",
    "Item",
    "Removal",
    "ResourceMessage",
    "block_budgets",
    "blocks_of",
    "check_spec",
    "check_specs",
    "default_block",
    "expired",
    "make_spec",
    "plan_evictions",
    "plan_flush",
    "render_key",
    "sanitise_key",
    "stream_of",
    "token_count",
]
