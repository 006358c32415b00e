"""An import embeds each text once (issue 20, item 5): a turn, a statement the classifier reads,
the neighbours asked for it, the fact stored. It used to embed each statement 6-7 times."""

from __future__ import annotations

from pathlib import Path

from benchmarks.telegram_export import policy_yaml, write_full_export
from bot.config import Settings
from bot.runtime import Runtime
from epmem.ingest import ImportRun, open_export
from testkit.house import shared_embedder
from tests.epmem.test_embed_once import Counting


async def _facts(runtime: Runtime) -> list[tuple[object, ...]]:
    return sorted(
        (
            f.id,
            f.text,
            f.event_id,
            f.version,
            f.covers,
            f.category,
            f.level,
            f.domain,
            f.state,
            tuple(f.whitelist),
            tuple(f.blacklist),
            tuple(f.evidence),
        )
        for f in await runtime.memory.all()
    )


async def _import(data: Path, policy_file: Path, export: Path) -> tuple[Counting, list[tuple[object, ...]]]:
    counting = Counting(shared_embedder())
    runtime = await Runtime.open(Settings(data_dir=data, policy=policy_file), embedder=counting)
    try:
        counting.asked.clear()  # opening embeds the categories' profiles
        run = ImportRun(runtime.conversations, runtime.journal, runtime.distiller, source=str(export), batch=16)
        report = await run.run(open_export(export, runtime.policy, None).sessions())
        assert report.extracted == report.sessions and report.facts
        return counting, await _facts(runtime)
    finally:
        await runtime.close()


async def test_an_import_embeds_each_text_once_and_two_imports_store_the_same(tmp_path: Path) -> None:
    export = write_full_export(tmp_path / "result.json", chats=4, messages_per_chat=60, confided_every=5)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy_yaml(contacts=4))
    counting, facts = await _import(tmp_path / "one", policy_file, export)
    assert counting.asked and max(counting.asked.values()) == 1, counting.asked.most_common(3)
    assert {text for _, text, *_ in facts} <= set(counting.asked)  # the facts' texts went through it
    _, again = await _import(tmp_path / "two", policy_file, export)
    assert again == facts
