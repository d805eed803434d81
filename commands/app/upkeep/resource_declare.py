"""Declaring resources by a call (``resource.declared``, so it replays) and listing them."""

from __future__ import annotations

from collections.abc import Mapping

from eventstore import ResourceDeclared, ResourceSpec
from projections import ResourceActivity

from .. import log as _log
from ..resources.reading import specs
from ..resources.spec import make_spec
from ..store.store import Store

__all__ = ["RESOURCES_STREAM", "activity", "declare", "declared"]

RESOURCES_STREAM = "resources"


def declare(store: Store, spec: ResourceSpec | Mapping[str, object]) -> ResourceSpec:
    """Declare (or declare again, replacing) a resource; a spec equal to the one
    in force appends nothing."""
    checked = make_spec(spec)
    with store.read() as views:
        if views.resource_spec(checked.id) == checked:
            return checked
    store.writer.append(RESOURCES_STREAM, lambda: [ResourceDeclared(checked)])
    _log.info("resource declared", resource_id=checked.id)
    return checked


def declared(store: Store, as_of: int | None = None) -> list[ResourceSpec]:
    """Every resource in force: ``config.toml``'s and the declared ones (which win), by id."""
    with store.read(as_of) as views:
        found = specs(store.settings.resources, views)
    return [found[k] for k in sorted(found)]


def activity(store: Store) -> ResourceActivity:
    """The last flush and eviction across every resource, and their counts."""
    with store.read() as views:
        return views.resource_activity()
