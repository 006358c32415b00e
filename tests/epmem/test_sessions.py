"""Group chats become two-party sub-sessions; chats are cut at long silences; ids are stable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from epmem.memory.sessions import Message, build_sessions

T0 = datetime(2026, 3, 1, 10, tzinfo=UTC)


def _m(i: int, speaker: str, text: str, minutes: int, **kw: object) -> Message:
    return Message(platform="telegram", chat_id="g", chat_kind="group", msg_id=str(i), speaker=speaker,
                   speaker_name={"owner": "Sam", "a": "Ana Li", "b": "Bo Chen"}.get(speaker, speaker), text=text,
                   time=T0 + timedelta(minutes=minutes), **kw)  # type: ignore[arg-type]


def test_group_split_by_reply_mention_name_and_adjacency() -> None:
    msgs = [
        _m(1, "a", "Lunch today?", 0),
        _m(2, "b", "Did the build pass?", 1),
        _m(3, "owner", "Yes, around one", 2, reply_to="1"),      # reply link -> a
        _m(4, "owner", "It did", 3, mentions=("b",)),            # mention -> b
        _m(5, "owner", "Ana, bring the umbrella", 4),            # first name -> a
        _m(6, "owner", "and the tests are green too", 5),        # adjacency: last speaker was b
    ]
    sessions = build_sessions(msgs)
    by = {s.participants[1]: [t.text for t in s.turns] for s in sessions}
    assert by == {"a": ["Lunch today?", "Yes, around one", "Ana, bring the umbrella"],
                  "b": ["Did the build pass?", "It did", "and the tests are green too"]}
    assert all(s.members == ["a", "b", "owner"] and s.origin_id for s in sessions)


def test_silence_cuts_sessions_and_ids_are_stable() -> None:
    msgs = [Message(platform="console", chat_id="d", chat_kind="direct", msg_id=str(i), speaker=sp,
                    speaker_name=sp, text=f"m{i}", time=T0 + timedelta(hours=h))
            for i, (sp, h) in enumerate([("owner", 0), ("a", 1), ("owner", 9), ("a", 9.5)])]
    first = build_sessions(msgs)
    assert [[t.text for t in s.turns] for s in first] == [["m0", "m1"], ["m2", "m3"]]
    assert [s.id for s in build_sessions(list(reversed(msgs)))] == [s.id for s in first]
