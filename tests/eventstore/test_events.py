"""The event catalogue: round trips, validation and upcasting."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventstore import (
    EVENT_TYPES,
    DeletedRef,
    EntriesDeleted,
    EntryRecorded,
    Event,
    EventLog,
    InvalidEventError,
    MessageDetails,
    SessionStarted,
    codec,
)
from eventstore.codec import decode_payload, encode_payload, validate_payload, validate_payloads
from eventstore.envelope import Header

from .strategies import event_strategy, events, ids


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


_maybe_ids = st.one_of(
    ids,
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
    st.sampled_from(["", "a\nb", "a\n", "\n", "-a", "a b", "x" * 128, "x" * 129, "é", "a\x00"]),
)


@given(session=_maybe_ids, user=st.none() | _maybe_ids, parent=st.none() | _maybe_ids,
       ids_=st.lists(_maybe_ids, max_size=3))
def test_the_one_regex_id_check_agrees_with_the_field_walk(
        session: str, user: str | None, parent: str | None, ids_: list[str]) -> None:
    entry = EntryRecorded(entry_id="e1", kind="message", content="c", occurred_at=0,
                          session_id=session, user_id=user,
                          details=MessageDetails(parent_id=parent))
    deleted = EntriesDeleted(request_id=session, entry_ids=tuple(ids_), erased_seqs=(1,),
                             refs=tuple(DeletedRef(entry_id=i, kind="message", recorded_seq=1,
                                                     session_id=user) for i in ids_[:1]))
    for event in (entry, deleted):
        found: list[str] = []
        codec._collector(type(event))(event, found)  # the ids the batch check collects
        assert codec._lines_valid(found) == (codec._bad_id(event, "$") is None)


@given(header=st.builds(
    Header, seq=st.integers(1, 2**62), stream=ids, version=st.integers(1, 2**40), id=ids,
    type=st.sampled_from(sorted(EVENT_TYPES)), recorded_at=st.integers(0, 2**62), actor=ids,
    causation_id=st.none() | ids, correlation_id=st.none() | ids,
    schema_version=st.integers(1, 9), erases=st.tuples() | st.tuples(st.integers(1, 2**40))))
def test_a_header_encodes_like_the_tuple_of_its_fields(header: Header) -> None:
    fields = tuple(getattr(header, name) for name in header.__struct_fields__)
    assert codec.encode_header_fields(fields) == codec.encode_header(header)


def test_a_batch_names_the_event_that_holds_a_bad_id(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The ids of a batch are checked together; a bad one names its event's
    field, and the append writes nothing."""
    good = EntryRecorded(entry_id="e1", kind="message", content="c", occurred_at=0, session_id="s1")
    bad = EntryRecorded(entry_id="e2", kind="message", content="c", occurred_at=0, session_id="s 1")
    with pytest.raises(InvalidEventError, match=r"entry\.recorded event: `\$\.session_id`"):
        validate_payloads([good, good, bad], 1 << 20)
    assert validate_payloads([good, good], 1 << 20) == (encode_payload(good),) * 2
    with EventLog.open(tmp_path_factory.mktemp("log")) as log:
        with pytest.raises(InvalidEventError):
            log.append("s:a", [good, bad], actor="t")
        assert log.head().seq == 0
