"""The same news told in two conversations: what one telling says about who may know holds for both.

A secret is often told twice: "between us, I got the Bergen offer" to a friend, and later "I got
the Bergen offer!" to someone else, with no cue the second time. Each telling is its own fact,
and the delegate may tell each one's listeners what they heard; but a listener of the open
telling must not become a reason to tell everyone the category's level allows. So a secret in
one telling closes its twins (the rule `twin-news` in epmem/ingest/failclosed.py):

- a blacklist on either telling ("don't tell Tom") is on both (a blacklist only narrows);
- a telling closed by a secrecy cue or by contextual integrity closes its open twin to level 0,
  keeping only the whitelist it had (the people who heard it whom its category left out): nobody
  is let in who was not already, so no composite opens either.

Twins are found by meaning (the embedder's cosine, :data:`SAME_NEWS`), never across a cover and
its truth, and never changing what the owner set by hand.
"""

from __future__ import annotations

from epmem.memory.facts import Fact

#: MiniLM cosine between two wordings of one statement (0.8+; unrelated facts of one story
#: score 0.4-0.7): picked with the classifier's thresholds (epmem/ingest/annotate.py).
SAME_NEWS = 0.8


def closed(fact: Fact) -> bool:
    """Closed by someone's words: a secrecy cue, or someone else's matter told in confidence."""
    return fact.effective_level() == 0 and any(e.startswith(("cue:secret:", "context:told-by:")) for e in fact.evidence)


def narrow(fact: Fact, twin: Fact) -> Fact:
    """``fact`` as its ``twin`` makes it: the twin's blacklist added, and level 0 (its whitelist
    kept) when the twin is closed. Only ever stricter; what the owner set is kept."""
    if fact.state == "owner-set" or fact.version != "truth" or twin.version != "truth":
        return fact
    black = list(dict.fromkeys([*fact.blacklist, *twin.blacklist]))
    update: dict[str, object] = {}
    if black != fact.blacklist:
        update["blacklist"] = black
        update["whitelist"] = [w for w in fact.whitelist if w not in black]
        update["proposed_whitelist"] = [w for w in fact.proposed_whitelist if w not in black]
    if closed(twin) and not closed(fact) and fact.effective_level() > 0:
        update["level"] = 0  # its whitelist kept: nobody let in who was not already (composites stay shut)
    if not update:
        return fact
    update["evidence"] = [*fact.evidence, f"twin:{twin.id}"]
    return fact.model_copy(update=update)
