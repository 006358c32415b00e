"""Group chats become two-party sub-sessions; chats are cut at long silences; ids are stable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from epmem.memory.sessions import Message, build_sessions

T0 = datetime(2026, 3, 1, 10, tzinfo=UTC)


def _m(i: int, speaker: str, text: str, minutes: int, **kw: object) -> Message:
    return Message(
        platform="telegram",
        chat_id="g",
        chat_kind="group",
        msg_id=str(i),
        speaker=speaker,
        speaker_name={"owner": "Sam", "a": "Ana Li", "b": "Bo Chen"}.get(speaker, speaker),
        text=text,
        time=T0 + timedelta(minutes=minutes),
        **kw,  # type: ignore[arg-type]
    )


def test_group_split_by_reply_mention_name_and_adjacency() -> None:
    msgs = [
        _m(1, "a", "Lunch today?", 0),
        _m(2, "b", "Did the build pass?", 1),
        _m(3, "owner", "Yes, around one", 2, reply_to="1"),  # reply link -> a
        _m(4, "owner", "It did", 3, mentions=("b",)),  # mention -> b
        _m(5, "owner", "Ana, bring the umbrella", 4),  # first name -> a
        _m(6, "owner", "and the tests are green too", 5),  # adjacency: last speaker was b
    ]
    sessions = build_sessions(msgs)
    by = {s.participants[1]: [t.text for t in s.turns] for s in sessions}
    assert by == {
        "a": ["Lunch today?", "Yes, around one", "Ana, bring the umbrella"],
        "b": ["Did the build pass?", "It did", "and the tests are green too"],
    }
    assert all(s.members == ["a", "b", "owner"] and s.origin_id for s in sessions)


def test_silence_cuts_sessions_and_ids_are_stable() -> None:
    msgs = [
        Message(
            platform="console",
            chat_id="d",
            chat_kind="direct",
            msg_id=str(i),
            speaker=sp,
            speaker_name=sp,
            text=f"m{i}",
            time=T0 + timedelta(hours=h),
        )
        for i, (sp, h) in enumerate([("owner", 0), ("a", 1), ("owner", 9), ("a", 9.5)])
    ]
    first = build_sessions(msgs)
    assert [[t.text for t in s.turns] for s in first] == [["m0", "m1"], ["m2", "m3"]]
    assert [s.id for s in build_sessions(list(reversed(msgs)))] == [s.id for s in first]


def test_a_chat_that_never_falls_silent_is_cut_at_topic_changes_with_bounded_sessions() -> None:
    from epmem.memory.segment import Segmenting
    from epmem.memory.sessions import SessionStream

    topics = [
        ("garden", "tomatoes basil compost watering seedlings"),
        ("boat", "sailing harbour mooring engine"),
        ("exam", "chemistry revision flashcards results"),
    ]
    msgs: list[Message] = []
    for i in range(300):
        name, words = topics[min(i // 100, 2)]
        w = words.split()
        msgs.append(
            Message(
                platform="telegram",
                chat_id="busy",
                chat_kind="direct",
                msg_id=str(i),
                speaker="owner" if i % 2 else "a",
                speaker_name="Sam" if i % 2 else "Ana",
                text=f"More about the {name}: {w[i % len(w)]} and {w[(i + 1) % len(w)]}",
                time=T0 + timedelta(minutes=3 * i),  # never six hours apart
                reply_to=str(i - 1) if i % 7 == 0 and i else None,
            )
        )
    config = Segmenting(max_turns=120, min_turns=20)
    sessions = build_sessions(msgs, segmenting=config)
    assert len(sessions) >= 3
    assert all(20 <= len(s.turns) <= 120 for s in sessions), [len(s.turns) for s in sessions]
    starts = [int(s.turns[0].msg_id) for s in sessions]
    assert 100 in starts and 200 in starts  # the cuts land on the changes of topic
    for s in sessions[1:]:  # never between a message and the reply to it, when another cut will do
        assert s.turns[0].reply_to is None
    # streamed one message at a time, the same sessions come out (stable ids on a re-import)
    stream = SessionStream(config)
    streamed = [x for m in msgs for x in stream.feed(m)] + stream.flush()
    assert [s.id for s in streamed] == [s.id for s in sessions]


def test_who_a_group_export_shows_read_each_message_is_kept_when_stored_and_read_back() -> None:
    """``Turn.seen_by`` (heard it from you) is in the stored payload, so a session read back from
    the store (``epmem reindex``) says who read each message as the import did."""
    from epmem.memory.conversations import sessions_from_payloads
    from epmem.store.base import Hit

    msgs = [
        _m(1, "a", "Lunch today?", 0),
        _m(2, "b", "Did the build pass?", 1),
        _m(3, "owner", "Yes, around one", 2, reply_to="1"),
        _m(4, "b", "ok", 3, reply_to="3"),
        _m(5, "a", "great", 4),
    ]
    (with_a,) = [s for s in build_sessions(msgs) if s.participants == ["owner", "a"]]
    owner_turn = next(t for t in with_a.turns if t.speaker == "owner")
    assert owner_turn.seen_by == ["a", "b"]  # a wrote before and after it, b replied to it
    (back,) = sessions_from_payloads([Hit(with_a.id, with_a.payload())], [Hit(t.id, t.payload()) for t in with_a.turns])
    assert [t.seen_by for t in back.turns] == [t.seen_by for t in with_a.turns]
