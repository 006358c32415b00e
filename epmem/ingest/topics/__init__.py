"""Sensitive topics every owner shares, whatever their policy calls them.

A policy names its own categories and keywords ("wedding: marry, elope"), and a fact often says
the sensitive thing in other words ("Base goes from 92k to 118k" has no "salary" in it). These
lists are the project's own, written once from what people treat as private in any culture the
team could think of (health, money, work changes, love, family events, the law, where someone
lives, secrets): not fitted to any scenario. They serve two purposes:

- a veto: a fact that touches one of these topics is never "mundane", so it never falls to the
  policy's default category on a guess (fail closed);
- a hint: the topic's description is compared with the policy's category profiles to suggest a
  category for the owner to confirm, and to file the fact when the match is unambiguous.

The package: :mod:`.topic` (what a topic is), :mod:`.english_livelihood` and
:mod:`.english_personal` (the English topics), :mod:`.chinese` (the same topics in Chinese
words), :mod:`.sensitive` (which topics a text touches) and :mod:`.credentials` (secrets a
text holds).
"""

from __future__ import annotations

from epmem.ingest.topics.chinese import TOPICS_ZH
from epmem.ingest.topics.credentials import credential_shaped, holds_secret
from epmem.ingest.topics.sensitive import TOPICS, VETO_TOPICS, sensitive_topics
from epmem.ingest.topics.topic import Topic

__all__ = ["TOPICS", "TOPICS_ZH", "VETO_TOPICS", "Topic", "credential_shaped", "holds_secret", "sensitive_topics"]
