"""Who may know what: the owner's policy, the disclosure calculus, and the owner's changes to both.

``model`` is the policy file; ``calculus`` adjudicates one fact (or several told together) for
one recipient; ``overlay`` and ``overrides`` keep the owner's command-made changes beside the
file, which is never rewritten; ``holder`` keeps the one effective policy every reader asks for;
``directory`` resolves platform identities to contacts.
"""

from epmem.policy.calculus import STRANGER, Composite, Gate, Recipient, Rulebook, Verdict, audience_allows, judge
from epmem.policy.directory import Directory, Resolved
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import (
    OWNER_ID,
    STRANGER_ID,
    Category,
    Contact,
    Owner,
    Policy,
    PolicyError,
    PolicyException,
    Problem,
    load_policy,
)

__all__ = [
    "OWNER_ID", "STRANGER", "STRANGER_ID", "Category", "Composite", "Contact", "Directory", "Gate", "Owner",
    "Policy", "PolicyError", "PolicyException", "PolicyHolder", "Problem", "ReadsPolicy", "Recipient", "Resolved",
    "Rulebook", "Verdict",
    "audience_allows", "judge", "load_policy",
]
