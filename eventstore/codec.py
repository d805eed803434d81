"""Encoding and decoding of headers and payloads, plus schema upcasters.

Payloads are msgpack maps (field names kept, so fields can be added); headers
are msgpack arrays. Encoders and decoders are built once, here.

Upcasters rewrite an old payload shape into the next version. They are keyed by
``(tag, version)`` and run in a chain until the current version is reached.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from .envelope import Header
from .errors import CorruptionError, InvalidEventError, SizeLimitError
from .events import EVENT_TYPES, ID_PATTERN, SCHEMA_VERSIONS, Event

__all__ = [
    "decode_header",
    "decode_payload",
    "encode_header",
    "encode_header_fields",
    "encode_payload",
    "register_upcaster",
    "validate_payload",
    "validate_payloads",
]

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_encoder = msgspec.msgpack.Encoder()
_header_decoder = msgspec.msgpack.Decoder(Header)
_event_decoder: msgspec.msgpack.Decoder[Event] = msgspec.msgpack.Decoder(Event)
_any_decoder = msgspec.msgpack.Decoder()
_upcasters: dict[tuple[str, int], Upcaster] = {}
_ID = re.compile(ID_PATTERN)
_ID_BODY = ID_PATTERN.removeprefix("^").removesuffix(r"\Z")
_ID_LINES = re.compile(rf"(?:{_ID_BODY}\n)*\Z")  # ids one per line
_ID_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
_COLLECTORS: dict[type, Callable[[object, list[str]], None]] = {}


def encode_header(header: Header) -> bytes:
    """Encode an envelope."""
    return _encoder.encode(header)


def encode_header_fields(fields: tuple[Any, ...]) -> bytes:
    """Encode an envelope given as the tuple of its fields in order; the bytes
    equal :func:`encode_header` of the same :class:`Header` (it is array-like)."""
    return _encoder.encode(fields)


def encode_payload(event: Event) -> bytes:
    """Encode an event payload."""
    return _encoder.encode(event)


def decode_header(data: bytes | memoryview, seq: int | None = None) -> Header:
    """Decode an envelope; raise :class:`CorruptionError` on bad bytes (msgspec
    raises ``UnicodeDecodeError``, not ``DecodeError``, for a string that is not
    UTF-8)."""
    try:
        return _header_decoder.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise CorruptionError(f"header of seq {seq} does not decode: {exc}", seq=seq) from None


def decode_payload(data: bytes | memoryview, header: Header) -> Event:
    """Decode a payload, upcasting it if it was written by an older schema."""
    try:
        if header.schema_version == SCHEMA_VERSIONS.get(header.type, 1):
            event = _event_decoder.decode(data)
        else:
            event = _upcast(data, header)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise CorruptionError(
            f"payload of seq {header.seq} does not decode: {exc}", seq=header.seq
        ) from None
    if event.__struct_config__.tag != header.type:
        raise CorruptionError(
            f"payload of seq {header.seq} has a type that differs from its header",
            seq=header.seq,
        )
    return event


def validate_payload(event: object, max_bytes: int) -> bytes:
    """Check an event fully (types and constraints) and return its encoding."""
    return validate_payloads((event,), max_bytes)[0]


def validate_payloads(events: Sequence[object], max_bytes: int) -> tuple[bytes, ...]:
    """Check events fully (types and constraints) and return their encodings.

    msgspec constructors skip constraint checks, so each encoding is decoded
    once with the validating decoder. The id fields of all the events are
    checked together, one regex over them (one per line); when it fails, the
    first event holding a bad id is named.
    """
    encode, decode = _encoder.encode, _event_decoder.decode
    ids: list[str] = []
    out = []
    for event in events:
        cls = type(event)
        if cls not in _EVENT_CLASSES:
            raise InvalidEventError(f"{cls.__name__} is not an event of the catalogue")
        try:
            data = encode(event)
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidEventError(f"{cls.__name__} cannot be encoded: {exc}") from None
        if len(data) > max_bytes:
            raise _too_large(event, len(data), max_bytes)
        try:
            decode(data)
        except msgspec.ValidationError as exc:
            raise InvalidEventError(f"invalid {_tag(event)} event: {exc}") from None
        _collector(cls)(event, ids)
        out.append(data)
    if not _lines_valid(ids):
        for event in events:
            bad = _bad_id(event, "$")
            if bad is not None:
                raise InvalidEventError(f"invalid {_tag(event)} event: `{bad}` must be an id of letters, "
                                        "digits and . _ : @ + - (max 128)")
    return tuple(out)


def _tag(event: object) -> str:
    return str(event.__struct_config__.tag)  # type: ignore[attr-defined]


def _lines_valid(ids: list[str]) -> bool:
    """Whether every one of ``ids`` is a valid id: one regex over all of them,
    one per line (an id holding a newline adds a line and fails the count)."""
    if not ids:
        return True
    try:
        lines = "\n".join(ids) + "\n"
    except TypeError:
        return False
    return _ID_LINES.match(lines) is not None and lines.count("\n") == len(ids)


def _collector(cls: type) -> Callable[[object, list[str]], None]:
    """The function that appends the ids held by an instance of ``cls``
    (recursively) to a list: its id fields read with one ``attrgetter``."""
    found = _COLLECTORS.get(cls)
    if found is None:
        found = _COLLECTORS[cls] = _make_collector(cls)
    return found


def _make_collector(cls: type) -> Callable[[object, list[str]], None]:
    fields = _id_fields(cls)
    id_names = [name for name, holds_ids in fields if holds_ids]
    nested = [name for name, holds_ids in fields if not holds_ids]
    getter = operator.attrgetter(*id_names) if id_names else None
    single = len(id_names) == 1  # attrgetter of one name returns the value itself

    def collect(obj: object, out: list[str]) -> None:
        if getter is not None:
            values = getter(obj)
            for value in (values,) if single else values:
                if value is None:
                    continue
                if type(value) is str:
                    out.append(value)
                else:
                    out.extend(value)
        for name in nested:
            value = getattr(obj, name)
            if value is None:
                continue
            for item in (value,) if isinstance(value, msgspec.Struct) else value:
                if isinstance(item, msgspec.Struct):
                    _collector(type(item))(item, out)

    return collect


def _bad_id(obj: object, path: str) -> str | None:
    """The path of the first id field of ``obj`` (recursively) that is not a valid id."""
    for name, holds_ids in _id_fields(type(obj)):
        value = getattr(obj, name)
        if value is None:
            continue
        where = f"{path}.{name}"
        for item in value if isinstance(value, tuple | list) else (value,):
            if holds_ids:
                if isinstance(item, str) and not _ID.match(item):
                    return where
            elif isinstance(item, msgspec.Struct) and (found := _bad_id(item, where)) is not None:
                return found
    return None


_NESTED = re.compile(
    r"\b(Details|\w+Details|DeletionCriteria|DeletedRef|EntryRecorded|EntryChanges|RedactionNote)\b")


def _id_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """The fields worth visiting: (name, True) for ids, (name, False) for nested structs."""
    cached = _ID_FIELDS.get(cls)
    if cached is None:
        notes = {k: str(v) for c in reversed(cls.__mro__)
                 for k, v in getattr(c, "__annotations__", {}).items()}
        fields = []
        for name in getattr(cls, "__struct_fields__", ()):
            note = notes.get(name, "")
            if re.search(r"\bId\b", note):
                fields.append((name, True))
            elif _NESTED.search(note):
                fields.append((name, False))
        cached = _ID_FIELDS[cls] = tuple(fields)
    return cached


def register_upcaster(tag: str, from_version: int, fn: Upcaster) -> None:
    """Register ``fn`` to rewrite ``tag`` payloads of ``from_version`` into the next."""
    if tag not in EVENT_TYPES:
        raise InvalidEventError(f"unknown event type {tag!r}")
    _upcasters[(tag, from_version)] = fn


def _upcast(data: bytes | memoryview, header: Header) -> Event:
    raw = _any_decoder.decode(data)
    if not isinstance(raw, dict):
        raise msgspec.DecodeError("payload is not a map")
    version = header.schema_version
    target = SCHEMA_VERSIONS.get(header.type, 1)
    while version < target:
        step = _upcasters.get((header.type, version))
        if step is None:
            raise msgspec.DecodeError(f"no upcaster for {header.type} v{version}")
        raw = step(raw)
        version += 1
    return msgspec.convert(raw, EVENT_TYPES[header.type])


def _too_large(event: object, size: int, limit: int) -> SizeLimitError:
    tag = event.__struct_config__.tag  # type: ignore[attr-defined]
    return SizeLimitError(f"{tag} payload is {size} bytes; the limit is {limit} bytes")


_EVENT_CLASSES = frozenset(EVENT_TYPES.values())
