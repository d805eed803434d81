"""LangGraph's filter and namespace-matching rules, as ``InMemoryStore`` applies them.

``InMemoryStore`` keeps these rules in private helpers, so they are written
out here (and the differential test holds the two to the same answers):

- a filter is a dict ``{field: condition}``; every field must match. A
  field is a key of the value, or else a dotted path into nested dicts
  (``user.role``, as LangGraph's SQL stores read it). A
  condition is a plain value (equality; a dict without ``$`` keys matches a
  nested dict field by field, a list matches element by element) or a dict of
  operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` (the order
  operators compare ``float()`` of both sides). An unknown operator raises
  ``ValueError``; comparing something ``float()`` refuses raises as well.
- a match condition is a ``prefix`` or ``suffix`` path whose ``*`` labels
  match any label; a namespace shorter than the path does not match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import ListNamespacesOp, MatchCondition

__all__ = ["list_namespaces", "matches_condition", "matches_filter"]


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a search filter."""
    if not filter:
        return True
    return all(_compare(_field(value, field), wanted) for field, wanted in filter.items())


def _field(value: Mapping[str, Any], field: str) -> Any:
    """The value's ``field``: the key itself when the value has it (as
    ``InMemoryStore`` reads it), else a dotted path into nested dicts (as
    LangGraph's SQL stores read ``user.role``); None when missing."""
    if field in value or "." not in field:
        return value.get(field)
    found: Any = value
    for part in field.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        if not isinstance(actual, dict):
            return False
        return all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(wanted)
                and all(_compare(a, w) for a, w in zip(actual, wanted, strict=False)))
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    match op:
        case "$eq":
            return bool(actual == operand)
        case "$ne":
            return bool(actual != operand)
        case "$gt":
            return float(actual) > float(operand)
        case "$gte":
            return float(actual) >= float(operand)
        case "$lt":
            return float(actual) < float(operand)
        case "$lte":
            return float(actual) <= float(operand)
    raise ValueError(f"Unsupported operator: {op}")


def matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace matches a prefix or suffix condition (``*`` is any label)."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(want == "*" or have == want for have, want in pairs)


def list_namespaces(namespaces: Iterable[tuple[str, ...]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """The namespaces an op lists: matched, cut at ``max_depth`` (deduplicated),
    sorted, then ``offset`` and ``limit``."""
    found = list(namespaces)
    if op.match_conditions:
        found = [ns for ns in found if all(matches_condition(c, ns) for c in op.match_conditions)]
    ordered = sorted({ns[: op.max_depth] for ns in found}) if op.max_depth is not None else sorted(found)
    return ordered[op.offset: op.offset + op.limit]
