"""The field types of events: ids, texts, labels, times, counts and units,
each a msgspec constraint checked when an event is written or decoded."""

from __future__ import annotations

import sys
from typing import Annotated, Final

from msgspec import Meta

from .timeutil import MAX_MICROS

__all__ = ["ID_PATTERN", "MAX_COUNT", "Count", "Days", "Id", "Label", "Micros", "Rate", "Seq", "Text", "Unit"]

# Ids are checked against ID_PATTERN when written (eventstore.codec), not on
# every decode: a regex per id field doubled the cost of reading the log.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}\Z"
# Times lie in the supported range (eventstore.timeutil): a time beyond it
# would be stored, and then every read that formats it would fail. Seqs and
# byte counts fit a signed 64-bit integer.
MAX_COUNT: Final = (1 << 63) - 1
Id = Annotated[str, Meta(min_length=1, max_length=128)]
Text = Annotated[str, Meta(min_length=1)]
Label = Annotated[str, Meta(min_length=1, max_length=200)]
Micros = Annotated[int, Meta(ge=0, le=MAX_MICROS)]
Seq = Annotated[int, Meta(ge=1, le=MAX_COUNT)]
Count = Annotated[int, Meta(ge=0, le=MAX_COUNT)]
Unit = Annotated[float, Meta(ge=0.0, le=1.0)]
# Finite and not negative: NaN fails ``ge``, infinity fails ``le``.
Rate = Annotated[float, Meta(ge=0.0, le=sys.float_info.max)]
# A retention period in days, within the supported range of times.
Days = Annotated[int, Meta(ge=0, le=MAX_MICROS // 86_400_000_000)]
