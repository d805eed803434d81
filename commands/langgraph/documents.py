"""How a LangGraph item lives in memlog: two user memories per item.

- The document: key :func:`item_key` (``lg_`` and 40 hex digits of a SHA-256
  of the namespace and the key: memory keys allow ``[a-z][a-z0-9_]*`` only),
  content the JSON ``{"namespace": [...], "key": ..., "value": {...},
  "index": [...] | false}``.
- The search text: key :func:`search_key` (``lgix_`` and the same digest),
  content the text of the fields the item is indexed on (``$``: the value's
  JSON), or :data:`NOT_INDEXED` for ``index=False``. A query ranks the items
  whose search text memlog's search (text, semantic or hybrid) finds, so the
  ``index`` config decides exactly what a query can match, and embeddings
  see the indexed text alone.

A namespace that holds at least one item has an anchor memory, key
:func:`namespace_key`, content ``{"namespace": [...]}``: its first save
orders the namespace (as ``InMemoryStore`` orders them by arrival) and it is
erased with the namespace's last item.

Ingest redaction (``redact_on_ingest``) runs on each string of the value,
never on the JSON text (a pattern matching across quotes would break it);
the namespace and the key are identifiers and are kept as given.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import get_text_at_path, tokenize_path

from eventstore import InvalidInputError

from ..app.forgetting.companions import ITEM_PREFIX, NAMESPACE_PREFIX, SEARCH_PREFIX

__all__ = [
    "ITEM_PREFIX",
    "NAMESPACE_PREFIX",
    "NOT_INDEXED",
    "SEARCH_PREFIX",
    "Stored",
    "decode_anchor",
    "decode_item",
    "encode_anchor",
    "encode_item",
    "has_words",
    "index_text",
    "item_key",
    "namespace_key",
    "redact_value",
    "search_key",
]

NOT_INDEXED = "-"  # the search text of an item put with index=False (or with no indexed text)
_HEX = 40

Namespace = tuple[str, ...]


@dataclass(frozen=True)
class Stored:
    """One live item as memlog holds it: the memory's id, the seq and time
    (microseconds) of its first save still current and of its latest."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    index: list[str] | None  # None: not searchable by query (put with index=False)
    memory_id: str
    created_seq: int
    created_at: int
    updated_at: int


def _digest(parts: object) -> str:
    raw = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_HEX]


def item_key(namespace: Namespace, key: str) -> str:
    """The memlog memory key of a LangGraph item (stable, 43 characters)."""
    return ITEM_PREFIX + _digest([list(namespace), key])


def search_key(namespace: Namespace, key: str) -> str:
    """The memlog memory key of an item's search text."""
    return SEARCH_PREFIX + _digest([list(namespace), key])


def namespace_key(namespace: Namespace) -> str:
    """The memlog memory key of a namespace's anchor."""
    return NAMESPACE_PREFIX + _digest(list(namespace))


def encode_item(namespace: Namespace, key: str, value: Mapping[str, Any], index: list[str] | None) -> str:
    """The memory content of an item (``value`` already redacted)."""
    doc = {"namespace": list(namespace), "key": key, "value": dict(value),
           "index": False if index is None else list(index)}
    try:
        return json.dumps(doc, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        kind = type(exc).__name__
        raise InvalidInputError(f"a LangGraph value must be JSON-serializable ({kind})") from None


def encode_anchor(namespace: Namespace) -> str:
    """The memory content of a namespace's anchor."""
    return json.dumps({"namespace": list(namespace)}, ensure_ascii=False)


def _load(content: str | None) -> dict[str, Any] | None:
    if content is None:
        return None
    try:
        doc = json.loads(content)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _namespace(doc: Mapping[str, Any]) -> Namespace | None:
    labels = doc.get("namespace")
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        return None
    return tuple(labels)


def decode_item(content: str | None) -> tuple[Namespace, str, dict[str, Any], list[str] | None] | None:
    """``(namespace, key, value, index)`` of an item's content; None when it is not one."""
    doc = _load(content)
    if doc is None:
        return None
    namespace, key, value, index = _namespace(doc), doc.get("key"), doc.get("value"), doc.get("index")
    if namespace is None or not isinstance(key, str) or not isinstance(value, dict):
        return None
    return namespace, key, value, list(index) if isinstance(index, list) else None


def decode_anchor(content: str | None) -> Namespace | None:
    """The namespace of an anchor's content; None when it is not one."""
    doc = _load(content)
    return None if doc is None else _namespace(doc)


def redact_value(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with every string (not the dict keys) passed through ``redact``."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, redact) for v in value]
    return value


def index_text(value: Mapping[str, Any], fields: list[str]) -> str:
    """The text a query is matched against: the value's JSON for ``$``, else
    the fields' texts (LangGraph's path syntax: ``a.b``, ``a[*].b``, ``a[0]``),
    one per line; :data:`NOT_INDEXED` when there is none."""
    texts: list[str] = []
    for path in fields:
        if path == "$":
            texts.append(json.dumps(dict(value), ensure_ascii=False))
        else:
            texts.extend(get_text_at_path(dict(value), tokenize_path(path)))
    text = "\n".join(texts)
    return text if text.strip() else NOT_INDEXED


_WORD = re.compile(r"[^\W_]+")


def has_words(query: str) -> bool:
    """Whether memlog's search finds a word to search for in ``query`` (letters
    or digits, at most 40 bytes); a query without one ranks nothing."""
    return any(len(word.encode()) <= 40 for word in _WORD.findall(query.lower()))
