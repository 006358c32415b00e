"""The LLM extractor: extraction and annotation of one session in one call (extract_annotate).

The model proposes; code disposes. Whatever the answer says is only a set of :class:`Draft`
facts: epmem/ingest/extract.py then clamps levels to the policy, drops whitelist entries nobody in the
conversation could have meant, and assigns ids. A call that fails in any way (timeout, HTTP
error, refusal, JSON that does not validate) raises :class:`LLMError`, and the caller keeps the
session's facts pending (level 0): nothing is disclosed on a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from epmem.ingest.extract import Draft
from epmem.llm.base import LLM, CallUsage
from epmem.llm.outputs import ExtractionResult
from epmem.llm.prompts import get_template
from epmem.memory.recall import FactMemory
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import OWNER_ID, Policy
from epmem.memory.sessions import Session

MAX_KNOWN_EVENTS = 30


@dataclass(frozen=True, slots=True)
class Proposal:
    drafts: list[Draft]
    known_events: set[str]
    usage: CallUsage
    prompt: str


class LLMExtractor(ReadsPolicy):
    def __init__(
        self,
        policy: Policy | PolicyHolder,
        llm: LLM,
        memory: FactMemory | None = None,
        template: str = "extract_annotate",
    ) -> None:
        self._policy = PolicyHolder.of(policy)
        self.llm = llm
        self.name = llm.name
        self.memory = memory
        self.template = get_template(template)

    def _categories(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for name, cat in self.policy.categories.items():
            desc = cat.description
            if cat.keywords:
                desc = f"{desc} (e.g. {', '.join(cat.keywords)})".strip()
            if cat.never_share:
                desc = f"{desc}; never shared with anyone".strip("; ")
            out.append({"name": name, "level": cat.level, "domain": cat.domain, "description": desc})
        return out

    def _contacts(self) -> list[dict[str, str]]:
        out = [{"id": cid, "name": c.name, "relationship": c.relationship} for cid, c in self.policy.contacts.items()]
        out += [
            {"id": gid, "name": "group: " + ", ".join(members), "relationship": "group"}
            for gid, members in self.policy.groups.items()
        ]
        return out

    def _speaker(self, session: Session, speaker: str, name: str) -> str:
        if speaker == OWNER_ID:
            return f"{self.policy.owner.name} (owner)"
        contact = self.policy.contacts.get(speaker)
        return f"{contact.name} [{speaker}]" if contact else f"{name or 'someone'} [not a contact]"

    async def known_events(self, session: Session) -> dict[str, str]:
        """Events already in memory that this session's turns resemble (for linking)."""
        if self.memory is None:
            return {}
        texts = [t.text for t in session.turns if t.text.strip()][:40]
        events: dict[str, str] = {}
        for row in await self.memory.similar(texts, limit=3):
            for fact, _ in row:
                if fact.version == "truth" and fact.event_id not in events and len(events) < MAX_KNOWN_EVENTS:
                    events[fact.event_id] = fact.text
        return events

    async def propose(self, session: Session) -> Proposal:
        """One call. Raises LLMError on any failure (the caller keeps facts pending)."""
        known = await self.known_events(session)
        messages = self.template.render(
            owner_name=self.policy.owner.name,
            categories=self._categories(),
            events=[{"id": e, "text": t} for e, t in known.items()],
            contacts=self._contacts(),
            transcript=[
                {"index": t.index, "speaker": self._speaker(session, t.speaker, t.speaker_name), "text": t.text}
                for t in session.turns
            ],
        )
        called = await self.llm.structured_call("extract_annotate", messages, ExtractionResult)
        return Proposal(
            to_drafts(called.value, session), set(known), called.usage, f"{self.template.key}@{self.template.digest}"
        )


def to_drafts(result: ExtractionResult, session: Session) -> list[Draft]:
    """The model's facts as drafts; turn numbers outside the transcript are dropped."""
    n = len(session.turns)
    out: list[Draft] = []
    for f in result.facts:
        out.append(
            Draft(
                text=f.text,
                version=f.version,
                covers=f.covers,
                category=f.category,
                level=f.level,
                domain=f.domain,
                event_id=f.event_id,
                source_turns=[t for t in f.source_turns if 0 <= t < n],
                whitelist=list(f.whitelist),
                blacklist=list(f.blacklist),
            )
        )
    return out
