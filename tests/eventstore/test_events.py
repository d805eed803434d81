"""The event catalogue: round trips, validation and upcasting."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventstore import EVENT_TYPES, Event, EventLog, SessionStarted
from eventstore.codec import decode_payload, encode_payload, validate_payload
from eventstore.envelope import Header

from .strategies import event_strategy, events


@pytest.mark.parametrize("tag", sorted(EVENT_TYPES))
@given(data=st.data())
def test_every_event_type_round_trips(tag: str, data: st.DataObject) -> None:
    """decode(encode(e)) == e for every event type of the catalogue."""
    event = data.draw(event_strategy(tag))
    header = Header(1, "s", 1, "id", tag, 0, "actor")
    assert decode_payload(encode_payload(event), header) == event
    validate_payload(event, 1 << 20)


@given(event=events)
def test_events_round_trip_through_the_log(tmp_path_factory: pytest.TempPathFactory,
                                           event: Event) -> None:
    """An appended event reads back equal, with its type in the header."""
    with EventLog.open(tmp_path_factory.mktemp("log")) as log:
        result = log.append("stream:1", [event], actor="tester")
        record = log.get(result.first_seq)
    assert record.event == event
    assert record.type == event.__struct_config__.tag  # type: ignore[attr-defined]


def test_every_event_has_a_docstring_and_a_dotted_tag() -> None:
    """The catalogue lists each event with a one-line docstring and a dotted tag."""
    for tag, cls in EVENT_TYPES.items():
        assert "." in tag
        assert cls.__doc__ and "\n" not in cls.__doc__.strip()


def test_upcaster_rewrites_an_old_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload written at schema v1 is upcast when the current version is 2."""
    from eventstore import codec
    from eventstore import events as catalogue

    old = msgspec.msgpack.encode({"type": "session.started", "sid": "s1"})
    monkeypatch.setitem(catalogue.SCHEMA_VERSIONS, "session.started", 2)
    monkeypatch.setattr(codec, "_upcasters", {})
    codec.register_upcaster(
        "session.started", 1,
        lambda raw: {**{k: v for k, v in raw.items() if k != "sid"}, "session_id": raw["sid"]},
    )
    header = Header(1, "s", 1, "id", "session.started", 0, "actor", schema_version=1)
    assert codec.decode_payload(old, header) == SessionStarted(session_id="s1")
