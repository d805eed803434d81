"""Redaction of secrets in text: seed 000's patterns plus custom regexes.

Every pattern runs on RE2 (``google-re2``), a linear-time engine: one search
never backtracks, so ``(a+)+$`` is as cheap as ``a+$``. The built-in patterns
are linear on any input (``tools/bench_redaction.py`` measures them on
adversarial 1 MiB texts). A custom regex is bounded three ways: what RE2 cannot
run in linear time (backreferences, lookaround) is refused when it is
compiled, so is a program larger than :data:`MAX_PROGRAM` instructions (RE2's
fallback costs grow with it), and its matches run under a time limit of
:data:`TIME_LIMIT` seconds plus one second per MiB of text (many matches that
each look far ahead add up); past it the redaction stops with
:class:`~eventstore.InvalidPatternError` and nothing is written.

Texts are matched as UTF-8 bytes (lone surrogates pass through). Only the
number of spans removed per pattern kind is ever recorded; the removed text is
not kept anywhere.
"""

from __future__ import annotations

import string
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import re2

from eventstore import InvalidInputError, InvalidPatternError

__all__ = ["MAX_PROGRAM", "PATTERNS", "REPLACEMENT", "TIME_LIMIT", "Redactor", "compile_regex"]

REPLACEMENT = "[REDACTED]"
# Python's \s for str (str.isspace), spelled for RE2, whose \s is ASCII only.
_WS = r"\s\v\x{1c}-\x{1f}\x{85}\p{Z}"
# Between a password's keyword and the secret: signs (``:``, ``=``, ``,``,
# ``->``, ``=>``, dashes, arrows) and the linking words of a sentence.
_LINK = rf"(?:[{_WS}]*(?:[:=,;>\x{{2192}}\x{{2013}}\x{{2014}}-]+|\b(?:is|was|set|to|now)\b))"
# "for <one to three words>" then a link: "password for the admin account is x".
_FOR = rf"(?:[{_WS}]+for(?:[{_WS}]+[^{_WS}]+){{1,3}}?{_LINK}+)"
# A keyword (after a word boundary or an underscore: DB_PASSWORD), maybe quoted
# ("password": ...), then what stands before the secret; ``pw`` needs a link.
# A secret key named as such counts as a password: aws_secret_access_key=..., client secret: ...
_SECRET = r"secret(?:[_ -]?access)?[_ -]?key|(?:client|api)[_ -]?secret"
_KEYWORD = (rf"(?:(?:\b|_)(?:passwords?|passwd|passphrase|passcode|pwd|{_SECRET})\b[\"']?(?:{_FOR}|{_LINK}*)"
            rf"|\bpw\b[\"']?(?:{_FOR}|{_LINK}+))")
_LETTERS = (r"\p{Latin}\p{Greek}\p{Cyrillic}\p{Armenian}\p{Georgian}\p{Hebrew}\p{Arabic}\p{Devanagari}"
            r"\p{Hangul}\p{M}")
PATTERNS: dict[str, str] = {
    # Letters of the alphabets written with spaces between words (josé@exämple.pt);
    # scripts written without (Han, Kana, Thai) stay out, so the address ends where
    # their text begins. RE2's \b is ASCII only, so none is asked for.
    "email": rf"[{_LETTERS}\p{{N}}._%+-]+@[{_LETTERS}\p{{N}}.-]+\.[{_LETTERS}]{{2,}}",
    # Long opaque tokens: a JWT whole (its header alone is a standard string),
    # the common prefixed forms (sk-..., ghp_..., AKIA...), and a run of 32 or
    # more letters and digits with the token characters around it (-, _, +, =; a
    # path's other parts stay).
    "api_key": r"\beyJ[A-Za-z0-9_-]{13,}\.[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]+)?"
               r"|\b(?:sk|pk|rk|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{16,}\b|\bAKIA[0-9A-Z]{16}\b"
               r"|[A-Za-z0-9_+-]*[A-Za-z0-9]{32,}[A-Za-z0-9_+=-]*",
    # Keywords and links, repeated ("the password, password: x"), then the secret:
    # the seed's pattern took "is" for the secret and kept it.
    "password": rf"(?i)(?:{_KEYWORD}[{_WS}]*)+[^{_WS}]+",
}
MAX_PROGRAM = 300
TIME_LIMIT = 1.0
_MIB = 1 << 20
_REPLACEMENT = REPLACEMENT.encode()

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print parse errors on stderr; they are raised instead

# Every api_key match holds a run of 16 or more of [A-Za-z0-9_-]. Mapping those
# bytes to "a" and every other byte to " " lets a C substring search rule the
# regex out for ordinary prose.
_TOKEN_BYTES = frozenset((string.ascii_letters + string.digits + "_-").encode())
_TOKEN_TABLE = bytes(ord("a") if b in _TOKEN_BYTES else ord(" ") for b in range(256))
_TOKEN_RUN = b"a" * 16
_LONG_S = "\u017f".encode()  # folds to "s" under (?i)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _python_z(regex: str) -> str:
    r"""``regex`` with Python's ``\Z`` (end of text) spelled as RE2's ``\z``."""
    out, i = [], 0
    while i < len(regex):
        pair = regex[i:i + 2]
        out.append("\\z" if pair == "\\Z" else pair if pair[:1] == "\\" else regex[i])
        i += 2 if pair[:1] == "\\" else 1
    return "".join(out)


def compile_regex(name: str, regex: object) -> Any:
    """A custom regex compiled on RE2, or :class:`~eventstore.InvalidPatternError`."""
    if not isinstance(regex, str) or not regex:
        raise InvalidPatternError(f"regex {name!r} must be a non-empty string")
    try:
        compiled = re2.compile(_python_z(regex), _OPTIONS)
    except re2.error as exc:
        raise InvalidPatternError(f"regex {name!r} is not accepted by the linear-time engine (RE2): "
                                  f"{_re2_problem(exc)}") from None
    if compiled.programsize > MAX_PROGRAM:
        raise InvalidPatternError(
            f"regex {name!r} is too large for the linear-time engine ({compiled.programsize} "
            f"instructions, at most {MAX_PROGRAM}); use smaller repetition counts")
    if compiled.fullmatch(b"") is not None:
        raise InvalidPatternError(f"regex {name!r} matches the empty text; it would remove nothing")
    return compiled


def _re2_problem(exc: Exception) -> str:
    """RE2's reason, with what it means for a Python regex, without the part of
    the regex RE2 quotes after it (a regex often spells the very text it is
    meant to remove)."""
    raw = exc.args[0] if exc.args else ""
    detail = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    reason = detail.split(": ", 1)[0]
    if any(detail.endswith(op) for op in ("(?=", "(?!", "(?<=", "(?<!")):
        return f"{reason} (lookaround is not supported)"
    if detail[-2:-1] == "\\" and detail[-1:].isdigit():
        return f"{reason} (backreferences are not supported)"
    return reason


class _Pattern:
    """One named pattern on RE2, matched over UTF-8 bytes."""

    __slots__ = ("bounded", "kind", "regex")

    def __init__(self, kind: str, regex: Any, bounded: bool) -> None:
        self.kind = kind
        self.regex = regex
        self.bounded = bounded

    def spans(self, data: bytes, deadline: float | None) -> Iterator[tuple[int, int]]:
        """The non-empty matches in ``data``, checking ``deadline`` after each."""
        for match in self.regex.finditer(data):
            if deadline is not None and time.monotonic() > deadline:
                raise self._runaway()
            start, end = match.span()
            if end > start:
                yield start, end

    def subn(self, data: bytes, deadline: float | None,
             replacement: bytes = _REPLACEMENT) -> tuple[bytes, int]:
        """``data`` with every match replaced, and how many were (the loop of
        :meth:`spans`, inlined: it runs once per match)."""
        pieces: list[bytes] = []
        append = pieces.append
        last = count = 0
        for match in self.regex.finditer(data):
            if deadline is not None and time.monotonic() > deadline:
                raise self._runaway()
            start, end = match.span()
            if end > start:
                append(data[last:start])
                append(replacement)
                last, count = end, count + 1
        if not count:
            return data, 0
        append(data[last:])
        return b"".join(pieces), count

    def _runaway(self) -> InvalidPatternError:
        return InvalidPatternError(
            f"regex {self.kind!r} ran past its time limit ({TIME_LIMIT:g} s plus 1 s per MiB of text) "
            "and would run away; nothing was written")

    def sub(self, repl: str, text: str) -> str:
        """``text`` with every match replaced by ``repl`` (no time limit)."""
        return _decode(self.kind, self.subn(_encode(text), None, _encode(repl))[0])


def _decode(kind: str, data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise InvalidPatternError(f"regex {kind!r} matched part of a character (\\C is not "
                                  "supported)") from None


def _may_match(kind: str, data: bytes) -> bool:
    """False when pattern ``kind`` cannot match (cheap substring checks)."""
    if kind == "email":
        return b"@" in data
    if kind == "api_key":
        return _TOKEN_RUN in data.translate(_TOKEN_TABLE)
    if kind == "password":
        lower = data.lower()
        return b"pass" in lower or b"pw" in lower or b"secret" in lower or _LONG_S in data
    return True


class Redactor:
    """Applies a set of named patterns; counts spans per kind."""

    def __init__(self, kinds: Iterable[str], custom: Mapping[str, str] | None = None) -> None:
        compiled: list[_Pattern] = []
        for kind in kinds:
            if kind not in PATTERNS:
                raise InvalidInputError(f"unknown redaction pattern {kind!r}")
            compiled.append(_Pattern(kind, re2.compile(PATTERNS[kind], _OPTIONS), False))
        for name, regex in (custom or {}).items():
            compiled.append(_Pattern(name, compile_regex(name, regex), True))
        self._compiled = compiled

    @property
    def _patterns(self) -> list[tuple[str, _Pattern]]:
        """The patterns in order, by kind (each has ``sub(repl, text)``)."""
        return [(p.kind, p) for p in self._compiled]

    @staticmethod
    def _deadline(size: int) -> float:
        return time.monotonic() + TIME_LIMIT + size / _MIB

    def redact(self, text: str, counts: dict[str, int]) -> str:
        """``text`` with every match replaced; ``counts`` gets the spans per kind."""
        data = _encode(text)
        deadline = self._deadline(len(data))
        changed: str | None = None
        for pattern in self._compiled:
            if not _may_match(pattern.kind, data):
                continue
            data, n = pattern.subn(data, deadline if pattern.bounded else None)
            if n:
                counts[pattern.kind] = counts.get(pattern.kind, 0) + n
                changed = pattern.kind if pattern.bounded or changed is None else changed
        return text if changed is None else _decode(changed, data)

    def spans(self, text: str) -> list[str]:
        """The substrings that :meth:`redact` would remove (to scan for after a purge)."""
        data = _encode(text)
        deadline = self._deadline(len(data))
        return [_decode(p.kind, data[start:end]) for p in self._compiled
                for start, end in p.spans(data, deadline if p.bounded else None)]

    def redact_optional(self, text: str | None, counts: dict[str, int]) -> str | None:
        """Like :meth:`redact`, passing ``None`` through."""
        return None if text is None else self.redact(text, counts)
