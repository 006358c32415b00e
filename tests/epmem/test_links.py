"""Links between events (one matter), in a real SQLite state database."""

from __future__ import annotations

from pathlib import Path

from epmem.memory.links import MIGRATIONS, EventLinks, Matters
from epmem.sqlite import open_database


def test_a_matter_is_a_connected_group_of_events() -> None:
    matters = Matters.of([("b", "a"), ("c", "b"), ("x", "y")])
    assert matters.matter("c") == matters.matter("a") == "a" and matters.matter("z") == "z"
    assert matters.groups() == [["a", "b", "c"], ["x", "y"]]
    # an iterator is read once: unlinked events are still their own matter
    assert matters.events(e for e in ["z", "b"]) == {"z", "a", "b", "c"}
    assert Matters.of([]).events(iter(["e1"])) == {"e1"}


async def test_links_are_stored_listed_and_removed(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "state.sqlite", (MIGRATIONS,), "state database")
    try:
        links = EventLinks(db)
        assert await links.link(["e-house", "e-bonus", "e-deposit", "e-bonus"], "owner") == 2
        assert await links.link(["e-bonus", "e-house"], "scenario") == 0  # already linked
        assert (await links.matters()).groups() == [["e-bonus", "e-deposit", "e-house"]]
        assert await links.all() == [("e-bonus", "e-house", "owner"), ("e-deposit", "e-house", "owner")]
        assert await links.unlink("e-bonus", "e-deposit") == 0  # one matter through e-house, no direct link
        assert await links.unlink("e-house", "e-deposit") == 1
        assert (await links.matters()).groups() == [["e-bonus", "e-house"]]
        assert await links.unlink("e-house") == 1
        assert await links.all() == []
    finally:
        await db.close()
