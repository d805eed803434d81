"""Fitting a context block into its token budget: trim inside sections first,
then drop whole sections in seed 002's order.

Each section holds items, most valuable first (the newest, or the most
relevant). Over budget, sections are trimmed in the drop order: a section's
least valuable items go first, then its last item is cut with an ellipsis,
never shorter than :data:`MIN_CUT` characters. Only when every section at its
smallest still does not fit is a whole section dropped (the first of the drop
order), and the trimming starts again from the untrimmed sections. The last
section left may be cut below :data:`MIN_CUT`, so a block is empty only when
not even a title fits.

A section may hold a share of the budget (``shares``, the setting
``context_shares``): that part is kept for it, up to what the section needs
in full. The other sections fit, by the rules above, in the budget less what
is kept; the sections with a share then take whatever room the others left,
their least valuable items going first when that is less than they need.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..results import ContextBlock, ContextSection

__all__ = ["MIN_CUT", "Section", "block", "fit"]

Count = Callable[[str], int]

MIN_CUT = 80  # characters a cut item keeps at least (while another section could go instead)
_HEADER = "## MEMORY CONTEXT\n\n"
_ELLIPSIS = "…"


@dataclass
class Section:
    """One section being fitted: a title and its items, most valuable first;
    ``chronological`` sections print their items oldest first."""

    name: str
    title: str
    items: list[str]
    chronological: bool = False
    removed: int = 0
    cut: bool = False
    reserved: int = 0  # tokens of the budget kept for it by its share

    def text(self) -> str:
        """The section as printed."""
        lines = reversed(self.items) if self.chronological else self.items
        return "\n".join([self.title, *lines])


def render(sections: Sequence[Section], order: Sequence[str]) -> str:
    """The block's text: the sections with items, in print order."""
    shown = sorted((s for s in sections if s.items), key=lambda s: order.index(s.name))
    return _HEADER + "\n\n".join(s.text() for s in shown) if shown else ""


def fit(sections: list[Section], budget: int, count: Count, order: Sequence[str],
        drop_order: Sequence[str], shares: Mapping[str, float] | None = None,
        ) -> tuple[list[Section], list[str]]:
    """The sections trimmed to fit ``budget`` and the names dropped whole, in drop
    order; a section named in ``shares`` has that share of the budget kept for it
    while the others fit without dropping a section, and takes what they leave."""
    held = [s for s in sections if s.items and (shares or {}).get(s.name, 0) > 0]
    rest = [s for s in sections if s not in held]
    smallest = _smallest(rest, count, order)
    if not held or shares is None or smallest > budget:
        return _fit(sections, budget, count, order, drop_order)
    held = [replace(s, items=list(s.items), reserved=min(count(s.text()), int(shares[s.name] * budget)))
            for s in held]
    room = max(budget - sum(s.reserved for s in held), smallest)
    live, dropped = _fit(rest, room, count, order, drop_order)
    live += held
    names = [s.name for s in held]
    held_order = [n for n in drop_order if n in names] + [n for n in names if n not in drop_order]
    if _trim(live, budget, count, order, held_order, floor=MIN_CUT):
        return live, dropped
    _trim(live, budget, count, order, held_order, floor=1)
    emptied = [n for n in held_order if not any(s.name == n and s.items for s in live)]
    return [s for s in live if s.items], dropped + emptied


def _smallest(sections: list[Section], count: Count, order: Sequence[str]) -> int:
    """The tokens of ``sections`` trimmed as far as trimming goes before a section
    is dropped: each to its first item, cut to :data:`MIN_CUT` characters."""
    least = [replace(s, items=[_shortest(s.items[0])]) for s in sections if s.items]
    return count(render(least, order))


def _shortest(item: str) -> str:
    return item if len(item) <= MIN_CUT else item[:MIN_CUT].rstrip() + _ELLIPSIS


def _fit(sections: list[Section], budget: int, count: Count, order: Sequence[str],
         drop_order: Sequence[str]) -> tuple[list[Section], list[str]]:
    """:func:`fit` without shares."""
    dropped: list[str] = []
    while True:
        live = [replace(s, items=list(s.items)) for s in sections if s.items and s.name not in dropped]
        if _trim(live, budget, count, order, drop_order, floor=MIN_CUT):
            return live, dropped
        victim = next((n for n in drop_order if n not in dropped and any(s.name == n for s in live)), None)
        if victim is None or len(live) <= 1:
            _trim(live, budget, count, order, drop_order, floor=1)
            emptied = {s.name for s in live if not s.items}
            return [s for s in live if s.items], dropped + [n for n in drop_order if n in emptied]
        dropped.append(victim)


def _trim(live: list[Section], budget: int, count: Count, order: Sequence[str],
          drop_order: Sequence[str], floor: int) -> bool:
    """Trim ``live`` in place, section by section in the drop order, until it fits."""
    def fits() -> bool:
        return count(render(live, order)) <= budget

    for name in drop_order:
        if fits():
            return True
        for section in (s for s in live if s.name == name):
            while len(section.items) > 1 and not fits():
                section.items.pop()
                section.removed += 1
            if not fits():
                _cut(section, fits, floor)
    if fits():
        return True
    if floor <= 1:  # not even a title fits: nothing is shown
        for section in live:
            section.removed += len(section.items)
            section.items.clear()
    return False


def _cut(section: Section, fits: Callable[[], bool], floor: int) -> None:
    """Cut the section's one item to the longest prefix that fits (at least ``floor``
    characters, or the whole item when it is shorter than that)."""
    if not section.items:
        return
    item = section.items[0]
    if len(item) <= floor:
        if floor <= 1:
            section.items.clear()
            section.removed += 1
        return
    low, high = floor, len(item) - 1
    best = floor
    while low <= high:
        mid = (low + high) // 2
        section.items[0] = item[:mid].rstrip() + _ELLIPSIS
        if fits():
            best, low = mid, mid + 1
        else:
            high = mid - 1
    section.items[0] = item[:best].rstrip() + _ELLIPSIS
    section.cut = True
    if floor <= 1 and not fits():
        section.items.clear()
        section.removed += 1


def block(live: list[Section], dropped: list[str], budget: int, count: Count,
          order: Sequence[str], truncated: bool) -> ContextBlock:
    """The fitted block with its report."""
    text = render(live, order)
    shown = sorted((s for s in live if s.items), key=lambda s: order.index(s.name))
    sections = tuple(ContextSection(s.name, count(s.text()), s.text(), len(s.items), s.removed, s.cut,
                                    s.reserved) for s in shown)
    trimmed = tuple(s.name for s in sorted(live, key=lambda s: order.index(s.name))
                    if s.removed or s.cut)
    return ContextBlock(text=text, tokens=count(text), budget=budget, sections=sections,
                       dropped=tuple(dropped), truncated=truncated, trimmed=trimmed)
