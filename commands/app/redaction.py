"""Redaction of secrets in text: seed 000's patterns plus custom regexes.

Only the number of spans removed per pattern kind is ever recorded; the removed
text is not kept anywhere.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping

from eventstore import InvalidInputError

__all__ = ["PATTERNS", "REPLACEMENT", "Redactor"]

REPLACEMENT = "[REDACTED]"
PATTERNS: dict[str, str] = {
    "email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
    # Long opaque tokens, including the common prefixed forms (sk-..., ghp_..., AKIA...).
    "api_key": r"\b(?:sk|pk|rk|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{16,}\b|\bAKIA[0-9A-Z]{16}\b"
               r"|\b[A-Za-z0-9]{32,}\b",
    "password": r"(?i)\b(?:password|passwd|pwd)\b\s*[:=]?\s*\S+",
}

# Every api_key match holds a run of 16 or more of [A-Za-z0-9_-]. Mapping those
# bytes to "a" and every other byte to " " lets a C substring search rule the
# (slow) regex out for ordinary prose.
_TOKEN_BYTES = frozenset((string.ascii_letters + string.digits + "_-").encode())
_TOKEN_TABLE = bytes(ord("a") if b in _TOKEN_BYTES else ord(" ") for b in range(256))
_TOKEN_RUN = b"a" * 16


def _may_hold_token(text: str) -> bool:
    return _TOKEN_RUN in text.encode("utf-8", "surrogatepass").translate(_TOKEN_TABLE)


class Redactor:
    """Applies a set of named patterns; counts spans per kind."""

    def __init__(self, kinds: Iterable[str], custom: Mapping[str, str] | None = None) -> None:
        compiled: list[tuple[str, re.Pattern[str]]] = []
        for kind in kinds:
            if kind not in PATTERNS:
                raise InvalidInputError(f"unknown redaction pattern {kind!r}")
            compiled.append((kind, re.compile(PATTERNS[kind])))
        for name, regex in (custom or {}).items():
            try:
                compiled.append((name, re.compile(regex)))
            except re.error as exc:
                raise InvalidInputError(f"invalid regex for {name!r}: {exc}") from None
        self._patterns = compiled

    def redact(self, text: str, counts: dict[str, int]) -> str:
        """``text`` with every match replaced; ``counts`` gets the spans per kind."""
        lower: str | None = None
        for kind, pattern in self._patterns:
            # Cheap substring checks skip a regex scan when it cannot match.
            if kind == "email" and "@" not in text:
                continue
            if kind == "api_key" and not _may_hold_token(text):
                continue
            if kind == "password":
                lower = text.lower() if lower is None else lower
                if "pass" not in lower and "pwd" not in lower:
                    continue
            text, n = pattern.subn(REPLACEMENT, text)
            if n:
                counts[kind] = counts.get(kind, 0) + n
        return text

    def spans(self, text: str) -> list[str]:
        """The substrings that :meth:`redact` would remove (to scan for after a purge)."""
        return [m.group(0) for _, pattern in self._patterns for m in pattern.finditer(text)]

    def redact_optional(self, text: str | None, counts: dict[str, int]) -> str | None:
        """Like :meth:`redact`, passing ``None`` through."""
        return None if text is None else self.redact(text, counts)
