"""The inlined scoring of search candidates equals the decay functions it inlines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from projections import DecayParams, access_score, decay_factor, importance_of, relevance, score

MICROS = st.integers(0, 2 * 10**15)
KINDS = st.sampled_from(["message", "decision", "finding", "task", "other"])
PARAMS = st.builds(DecayParams, rates=st.dictionaries(KINDS, st.floats(0.0, 2.0), max_size=3),
                   floor=st.floats(0.0, 1.0), access_boost=st.floats(0.0, 1.0),
                   importance_boost=st.floats(0.0, 1.0))


@given(hit=st.floats(0.0, 50.0), top=st.floats(0.0, 50.0), kind=KINDS, occurred_at=MICROS,
       now=MICROS, accesses=st.integers(0, 100), last_access=st.integers(-1, 2 * 10**15),
       importance=st.none() | st.floats(0.0, 1.0),
       level=st.sampled_from([None, "low", "high", "critical"]), params=PARAMS)
def test_score_equals_the_composition_of_the_decay_functions(
        hit: float, top: float, kind: str, occurred_at: int, now: int, accesses: int,
        last_access: int, importance: float | None, level: str | None, params: DecayParams) -> None:
    """Same floats, bit for bit, as relevance(decay_factor(...), importance_of(...), ...)."""
    imp = importance_of(kind, importance, level)
    factor = decay_factor(kind, occurred_at, now, accesses, imp, params)
    text = hit / top if top > 0 else 0.0
    expected = (relevance(text, factor, imp, access_score(last_access, now)), factor)
    assert score(hit, top, kind, occurred_at, now, accesses, last_access, importance, params,
                 level) == expected
