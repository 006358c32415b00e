"""Who may know what: the owner's policy, the disclosure calculus, and the owner's changes to both.

``model`` is the policy file; ``calculus`` adjudicates one fact (or several told together) for
one recipient; ``overlay`` and ``overrides`` keep the owner's command-made changes beside the
file, which is never rewritten; ``holder`` keeps the one effective policy every reader asks for;
``directory`` resolves platform identities to contacts.
"""

from epmem.policy.calculus import (
    STRANGER,
    Composite,
    Gate,
    HeardIt,
    Recipient,
    Rulebook,
    Verdict,
    audience_allows,
    judge,
)
from epmem.policy.directory import UNKNOWN_STRANGER, Directory, Resolved
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import (
    OWNER_ID,
    STRANGER_ID,
    Category,
    Contact,
    Domain,
    InfoLevel,
    Owner,
    Policy,
    PolicyError,
    PolicyException,
    Problem,
    category_profiles,
    line_for,
    load_policy,
    policy_json_schema,
    read_yaml,
    schema_problems,
)
from epmem.policy.overlay import MIGRATIONS as OVERLAY_MIGRATIONS
from epmem.policy.overlay import Overlay
from epmem.policy.overrides import Skipped

__all__ = [
    "audience_allows",
    "Category",
    "category_profiles",
    "Composite",
    "Contact",
    "Directory",
    "Gate",
    "HeardIt",
    "Domain",
    "InfoLevel",
    "judge",
    "line_for",
    "load_policy",
    "Overlay",
    "OVERLAY_MIGRATIONS",
    "Owner",
    "OWNER_ID",
    "Policy",
    "policy_json_schema",
    "PolicyError",
    "PolicyException",
    "PolicyHolder",
    "Problem",
    "read_yaml",
    "ReadsPolicy",
    "Recipient",
    "Resolved",
    "Rulebook",
    "schema_problems",
    "Skipped",
    "STRANGER",
    "STRANGER_ID",
    "UNKNOWN_STRANGER",
    "Verdict",
]
