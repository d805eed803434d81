"""The shape every maintenance step shares (issue 18): what is due, and doing it.

``memlog maintain`` (:mod:`commands.app.maintain`) runs a list of
:class:`Step`: each one first says what is due (:attr:`Step.due`, a read of
the views, cheap: a store with nothing due answers in well under a second),
then does one :class:`Due` at a time (:attr:`Step.run`), writing events with
the run's actor (``memlog/maintain``) and the due item's reason. A dry run
calls only ``due``.

A :class:`Due` names ids, counts and a reason, never content: it is printed,
logged and returned as JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from .store import Store
from .summarise import Summariser

__all__ = ["MAINTAIN_ACTOR", "Due", "Step", "StepContext"]

# The actor of every event a maintenance run writes (extracted entries keep
# their own, ``memlog/extract``).
MAINTAIN_ACTOR = "memlog/maintain"


class Due(msgspec.Struct, frozen=True):
    """One piece of work a step would do: ``target`` is an id (a session, an
    entry, a scope such as ``user:alice``, an entry kind), ``items`` how many
    entries or events it touches, ``reason`` why it is due (ids and figures
    only), ``ids`` the entries it takes when the step names them (retention)."""

    step: str
    target: str
    reason: str
    items: int = 1
    ids: list[str] = []


@dataclass(frozen=True)
class StepContext:
    """What a step's ``run`` is given: the actor to write as, the run's clock
    (microseconds since the epoch, UTC) and the store's summariser."""

    actor: str
    now: int
    summariser: Summariser


@dataclass(frozen=True)
class Step:
    """A maintenance step: ``due(store, now)`` lists its work (reads only);
    ``run(store, due, context)`` does one item and returns how many events it wrote.
    ``run_all``, when given, does every due item at once instead (one deletion,
    so one purge, for many items)."""

    name: str
    due: Callable[[Store, int], list[Due]]
    run: Callable[[Store, Due, StepContext], int]
    run_all: Callable[[Store, list[Due], StepContext], int] | None = None
