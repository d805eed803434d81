"""Resource specs (seed 003): checking a spec, its blocks and budgets, and
turning a key template into a sanitised key.

Keys: the template's ``{user_id}``, ``{session_id}`` and ``{agent_id}`` are
filled in, then every run of characters outside ``[A-Za-z0-9-_.:]`` becomes
one ``_``. When sanitising changed anything, or the key is longer than 512
characters, the key is cut to 503 characters and ``.`` plus 8 hex digits of
the SHA-256 of the unsanitised key are appended: two different raw keys
(``bob@x`` and ``bob_x``) never share a resource, and a key is at most 512
characters. The hash is of ids, never of content.
"""

from __future__ import annotations

import hashlib
import math
import re
import string
from collections.abc import Iterable, Mapping

import msgspec

from eventstore import InvalidInputError, ResourceBlock, ResourceSpec

__all__ = [
    "DEFAULT_BLOCK",
    "KEY_FIELDS",
    "MAX_KEY",
    "block_budgets",
    "blocks_of",
    "check_spec",
    "check_specs",
    "default_block",
    "instance_key",
    "key_fields",
    "make_spec",
    "render_key",
    "sanitise_key",
    "stream_of",
]

KEY_FIELDS = ("user_id", "session_id", "agent_id")
MAX_KEY = 512
DEFAULT_BLOCK = "default"
_BAD = re.compile(r"[^A-Za-z0-9\-_.:]+")
_STREAM_MAX = 200 - len("resource:")


def sanitise_key(raw: str) -> str:
    """``raw`` with runs of characters outside ``[A-Za-z0-9-_.:]`` as ``_``, at
    most 512 characters; a changed or cut key ends with ``.`` and 8 hex digits
    of the raw key's SHA-256."""
    clean = _BAD.sub("_", raw)
    if clean == raw and len(clean) <= MAX_KEY:
        return clean
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    return f"{clean[: MAX_KEY - 9]}.{digest}"


def key_fields(template: str) -> tuple[str, ...]:
    """The fields a key template uses (refusing any other)."""
    try:
        names = [f for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise InvalidInputError(f"key template is not valid: {exc}") from None
    for name in names:
        if name not in KEY_FIELDS:
            raise InvalidInputError(
                f"key template field {{{name}}} is unknown (use {{user_id}}, {{session_id}}, {{agent_id}})")
    return tuple(dict.fromkeys(names))


def render_key(template: str, values: Mapping[str, str | None]) -> str:
    """The sanitised key of ``template`` filled with ``values`` (every field it uses must be given)."""
    missing = [f for f in key_fields(template) if not values.get(f)]
    if missing:
        raise InvalidInputError(f"the resource key needs {', '.join(missing)}")
    raw = template.format(**{f: values.get(f) or "" for f in KEY_FIELDS})
    key = sanitise_key(raw)
    if not key.strip("_"):
        raise InvalidInputError("the resource key is empty once sanitised")
    return key


def instance_key(spec: ResourceSpec, values: Mapping[str, str | None]) -> str:
    """The key of one instance of ``spec``: the resource's id, then its key template
    filled with ``values`` (two resources with the same template never share items)."""
    return render_key(f"{spec.id}:{spec.key}", values)


def stream_of(key: str) -> str:
    """The log stream of a resource instance (a long key is named by its hash)."""
    if len(key) <= _STREAM_MAX:
        return f"resource:{key}"
    return f"resource:{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def blocks_of(spec: ResourceSpec) -> tuple[ResourceBlock, ...]:
    """The spec's blocks (one ``default`` block of priority 0 when it declares none)."""
    return spec.blocks or (ResourceBlock(DEFAULT_BLOCK),)


def default_block(spec: ResourceSpec) -> str:
    """Where an append goes without a block: ``default_block``, else the least
    important block (the largest priority number; the first of them)."""
    if spec.default_block is not None:
        return spec.default_block
    blocks = blocks_of(spec)
    worst = max(b.priority for b in blocks)
    return next(b.name for b in blocks if b.priority == worst)


def block_budgets(spec: ResourceSpec, total: int | None = None) -> dict[str, int]:
    """Each block's token budget out of ``total`` (the spec's limit by default):
    the lower of ``ratio`` x total and ``max_tokens``; a block with neither has the total."""
    limit = spec.token_limit if total is None else total
    out = {}
    for b in blocks_of(spec):
        caps = [limit]
        if b.ratio is not None:
            caps.append(math.floor(b.ratio * limit))
        if b.max_tokens is not None:
            caps.append(b.max_tokens)
        out[b.name] = max(0, min(caps))
    return out


def check_spec(spec: ResourceSpec) -> ResourceSpec:
    """Refuse a spec whose parts disagree: unknown key fields, a shared resource
    keyed by the user or the session, duplicate blocks, ratios over 1 in all, a default block
    that does not exist, a flush threshold of 0 (a ``flush_fraction`` of 0
    turns flushing off)."""
    fields = key_fields(spec.key)
    if spec.shared and ("user_id" in fields or "session_id" in fields):
        raise InvalidInputError(f"resource {spec.id}: a resource keyed by {{user_id}} or {{session_id}} is "
                                "one user's or one session's own; it cannot be shared")
    names = [b.name for b in spec.blocks]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"resource {spec.id}: block names must be unique")
    if sum(b.ratio or 0.0 for b in spec.blocks) > 1.0 + 1e-9:
        raise InvalidInputError(f"resource {spec.id}: the block ratios add up to more than 1")
    if spec.default_block is not None and spec.default_block not in [b.name for b in blocks_of(spec)]:
        raise InvalidInputError(f"resource {spec.id}: default_block {spec.default_block} is not a block")
    if spec.flush_threshold <= 0:
        raise InvalidInputError(f"resource {spec.id}: flush_threshold must be above 0")
    return spec


def check_specs(specs: Iterable[ResourceSpec]) -> None:
    """Check every spec; ids must be unique."""
    seen: set[str] = set()
    for spec in specs:
        check_spec(spec)
        if spec.id in seen:
            raise InvalidInputError(f"resource {spec.id} is declared twice")
        seen.add(spec.id)


def make_spec(spec: ResourceSpec | Mapping[str, object]) -> ResourceSpec:
    """A checked spec from a spec or a mapping (as in ``config.toml``)."""
    if not isinstance(spec, ResourceSpec):
        try:
            spec = msgspec.convert(dict(spec), ResourceSpec)
        except (msgspec.ValidationError, TypeError) as exc:
            raise InvalidInputError(f"invalid resource spec: {exc}") from None
    try:  # constraints are checked on decode: round-trip a spec built in code
        spec = msgspec.msgpack.decode(msgspec.msgpack.encode(spec), type=ResourceSpec)
    except msgspec.ValidationError as exc:
        raise InvalidInputError(f"invalid resource spec: {exc}") from None
    return check_spec(spec)
