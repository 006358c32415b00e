"""Settings from the environment: one explicit object, passed down, never a global."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from epmem.db import is_postgres_url, with_schema
from epmem.errors import EpmemError

from bot.examples import POLICY, example_file

#: the example owner's policy, shipped as package data (bot/examples/).
EXAMPLE_POLICY = example_file(POLICY)
ACTIVE_POLICY_NAME = "policy.yaml"
#: the folder of a data folder that holds one folder per owner of a deployment (bot/owners.py).
OWNERS_FOLDER = "owners"
#: an owner id: a folder name and a tenant id, the same on every file system and in any URL.
OWNER_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"


class ConfigError(EpmemError, RuntimeError):
    """Settings that cannot work together (the CLI prints it as one line)."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EPMEM_", extra="ignore", populate_by_name=True)

    data_dir: Path = Path("data")
    #: the audit log on a PostgreSQL server instead of the data folder's audit.sqlite: a
    #: ``postgresql://`` URL naming the owner's database (and, with ``schema=NAME``, a schema in
    #: it), where several workers may append to the owner's one chain. Each of several owners
    #: gets a schema of their own (:attr:`audit_target`). Needs the ``postgres`` extra.
    audit_url: SecretStr | None = None
    #: the state database (and, unless EPMEM_AUDIT_URL says otherwise, the audit log) on a
    #: PostgreSQL server: what several ``epmem run`` workers share (docs/WORKERS.md). The state
    #: tables go in a schema of their own (``state``, or ``owner_<id>_state``), the audit chain
    #: where :attr:`audit_target` says. Needs the ``postgres`` extra.
    database_url: SecretStr | None = None
    #: several workers on EPMEM_DATABASE_URL (bot/workers.py): a worker silent for this long is
    #: dead and its replies in flight are taken over; each beats this often.
    worker_lease_s: float = Field(default=30.0, gt=0)
    worker_beat_s: float = Field(default=3.0, gt=0)
    #: explicit policy file; when unset, the data folder's active policy (none: a one-line refusal).
    policy: Path | None = None
    llm_backend: Literal["rules", "openai"] = "rules"
    #: the openai backend: any OpenAI-compatible endpoint (OpenAI, DeepSeek, vLLM, Ollama...).
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "openai_base_url")
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key")
    )
    llm_model: str | None = None
    #: per HTTP request; the client retries ``llm_max_retries`` times on 429/5xx/timeouts. The
    #: defaults leave room for a model served on CPU (llama.cpp: a few to ~40 tokens/s).
    llm_timeout_s: float = Field(default=120.0, gt=0)
    llm_max_retries: int = Field(default=1, ge=0)
    #: the longest a reply waits for the model before the rules composer answers instead.
    llm_reply_budget_s: float = Field(default=45.0, gt=0)
    #: output token limits: per call (extraction), and for a reply (a few sentences).
    llm_max_output_tokens: int = Field(default=1024, gt=0)
    llm_reply_max_tokens: int = Field(default=300, gt=0)
    #: a model's reply longer than this (characters) is not sent (the rules reply is).
    llm_reply_max_chars: int = Field(default=1200, gt=0)
    #: with a model configured, the model chooses which of the allowed facts answer the question
    #: (one ``choose`` call per reply with facts to offer; epmem/reply/model_choice.py): it is
    #: shown at most ``llm_choose_offered`` of them, and waited for ``llm_choose_budget_s``, else
    #: the relevance step's choice stands. False: the relevance step alone chooses.
    model_chooses: bool = True
    llm_choose_offered: int = Field(default=8, ge=1)
    llm_choose_budget_s: float = Field(default=20.0, gt=0)
    #: response_format for structured calls: json_schema (OpenAI, vLLM, Ollama), json_object
    #: (DeepSeek: JSON mode), json_object_schema (llama.cpp server: JSON mode with the schema,
    #: decoded by grammar) or off.
    llm_structured_output: Literal["json_schema", "json_object", "json_object_schema", "off"] = "json_schema"
    #: background annotation of an ingested session: attempts, first back-off (doubling).
    annotate_attempts: int = Field(default=4, ge=1)
    annotate_backoff_s: float = Field(default=5.0, ge=0)
    #: the tenant id every stored point carries; several owners can share one Qdrant.
    owner_id: str = "default"
    #: one owner of a deployment of several (bot/owners.py): the data folder's ``owners/<owner>``
    #: is then this owner's own data folder, and ``owner`` their tenant id. Unset: the data
    #: folder is the one owner's, as it always was.
    owner: str | None = Field(default=None, pattern=OWNER_ID_PATTERN)
    #: a Qdrant server or cluster (with its API key); unset: embedded Qdrant Edge in data_dir.
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    #: dense embedder: bilingual (offline default: MiniLM, and USE multilingual v3 for text with
    #: Chinese, Japanese or Korean), minilm (English only), wordllama (offline, fast, weaker) or openai.
    embedder: Literal["bilingual", "minilm", "wordllama", "openai"] = "bilingual"
    #: the openai embedder's model (served at openai_base_url).
    embedding_model: str | None = None
    #: session score = alpha * native hybrid + beta * event-fact score (alpha + beta = 1).
    retrieval_alpha: float = Field(default=1.0, ge=0, le=1)
    retrieval_beta: float = Field(default=0.0, ge=0, le=1)
    #: the cross-encoder that picks the facts answering a question (epmem/reply/relevance/):
    #: ms-marco MiniLM L-12 (INT8 ONNX, shipped in a wheel), or off (recall scores alone).
    reranker: Literal["minilm-ce", "off"] = "minilm-ce"
    max_message_chars: int = Field(default=4000, ge=1)
    log_level: str = "INFO"
    log_format: Literal["auto", "json", "console"] = "auto"
    #: per-sender rate limit: at most this many messages per window (0 turns it off).
    rate_limit_messages: int = Field(default=20, ge=0)
    rate_limit_window_s: float = Field(default=60.0, gt=0)
    #: this many deflections to one sender within the window sends the owner a note (0: off).
    deflection_alert: int = Field(default=5, ge=0)
    deflection_window_s: float = Field(default=600.0, gt=0)
    #: how long a held reply (approval mode) waits for the owner before it expires unsent.
    approval_ttl_hours: float = Field(default=24.0, gt=0)
    #: the old behaviour, off by default (docs/DESIGN.md sec. 6.5): a fact from a conversation
    #: is open to its category's audience as soon as the rules settle it, without the owner's word.
    open_by_category: bool = False
    #: heard it from you (docs/DESIGN.md sec. 3): a fact the owner has not decided about is
    #: open to the people who heard it said, unless a cue or the owner shut them out. The
    #: owner's /heard turns it off for a fact, a contact or entirely.
    heard_it: bool = True
    #: consultations (bot/consultations/flow.py): how long one waits for the owner, how many may be open
    #: per asker, and whether a stranger's question may consult the owner at all.
    consult_ttl_hours: float = Field(default=24.0, gt=0)
    consult_max_open: int = Field(default=3, ge=0)
    consult_strangers: bool = False
    #: the bounds that keep the owner from being flooded (bot/consultations/bounds.py, README
    #: "Consultations"): per contact (all of its identities together) at most ``consult_max_open``
    #: open and ``consult_per_day`` asked in 24 hours (answered, open or expired alike); all
    #: strangers together ``consult_strangers_max_open`` and ``consult_strangers_per_day``; the
    #: owner in all ``consult_owner_per_day``. An event whose consultation expired unanswered is
    #: not asked about again for ``consult_reask_after_days``. What is not asked is in the digest.
    consult_per_day: int = Field(default=5, ge=0)
    consult_strangers_max_open: int = Field(default=2, ge=0)
    consult_strangers_per_day: int = Field(default=3, ge=0)
    consult_owner_per_day: int = Field(default=20, ge=0)
    consult_reask_after_days: float = Field(default=7.0, ge=0)
    #: heads-up notes about strangers drawing deflections: at most one note per this many
    #: minutes, listing every stranger flagged since the last one (the rest wait for the next
    #: note or the digest); a known contact's heads-up is its own note, as before.
    headsup_batch_minutes: float = Field(default=60.0, gt=0)
    #: a question asked in a group chat may consult the owner too (the follow-up is decided for
    #: everyone in the chat when it is sent).
    consult_groups: bool = False
    #: opt-in, off (0): open like the owner's last N consistent answers about similar facts.
    consult_learn_after: int = Field(default=0, ge=0)
    #: consultations one reply may lead to, one after another (docs/DESIGN.md sec. 6.7).
    consult_per_reply: int = Field(default=1, ge=1)
    #: events one message to the owner may ask about, each with its own buttons (the best, then
    #: those the cross-encoder is sure answer the question); one message is one consultation.
    consult_per_message: int = Field(default=1, ge=1)
    #: the composite rule across replies (epmem/reply/cumulative.py): how far back what a reader
    #: was told counts (days). A year: a matter (a house purchase, a job change, an illness)
    #: runs for months, and people remember what they were told; a short window would let anyone
    #: who waits it out hear the rest. It only ever holds back facts of the same matter.
    composite_window_days: float = Field(default=365.0, gt=0)
    #: one reply's facts judged as one composite (``reply``, the default) or matter by matter
    #: (``matter``: facts of unrelated events reveal nothing together, so Priya hears about knee
    #: surgery and a release date in one reply; but a missed link then fails open, and on the
    #: shared sets, which link nothing, 25 of 69 zh replies and 5 of 181 storylines-v1 replies
    #: told facts of related events that one composite denies). For owners who keep links.
    composite_scope: Literal["reply", "matter"] = "reply"
    #: when the owner's daily digest goes out (HH:MM, UTC), or "off".
    digest_time: str = Field(default="08:00", pattern=r"^(off|([01]\d|2[0-3]):[0-5]\d)$")

    @field_validator("data_dir")
    @classmethod
    def _a_folder(cls, value: Path) -> Path:
        """A data folder that is a file (or sits under one) fails here, in one line, rather than
        as a traceback from whichever part first tries to make a file in it."""
        for path in (value, *value.parents):
            if path.exists():
                if not path.is_dir():
                    what = "is a file" if path == value else f"is under {path}, which is a file"
                    raise ValueError(f"{value} {what}, not a folder")
                break
        return value

    @model_validator(mode="after")
    def _the_owners_folder(self) -> Settings:
        """``owner`` moves the data folder to that owner's, once, here: every part that reads
        ``data_dir`` (the stores, the audit log, the active policy, health) then reads the
        owner's without knowing there are others."""
        if self.owner is None:
            return self
        if "owner_id" in self.model_fields_set and self.owner_id != self.owner:
            raise ValueError(
                f"EPMEM_OWNER_ID={self.owner_id!r} differs from EPMEM_OWNER={self.owner!r}: an owner's "
                "tenant id is their owner id (unset EPMEM_OWNER_ID)"
            )
        self.data_dir = self.data_dir / OWNERS_FOLDER / self.owner
        self.owner_id = self.owner
        return self

    def policy_path(self) -> Path:
        """Explicit EPMEM_POLICY wins; else the data folder's active policy (`epmem init`, `epmem
        policy use`, `epmem demo`, `epmem load`); else a ConfigError saying how to make one. Never
        the example owner's without a word (bot/owner_policy.py ``resolve_policy`` also makes an
        explicit policy a new data folder's own)."""
        if self.policy is not None:
            return self.policy
        active = self.data_dir / ACTIVE_POLICY_NAME
        if active.exists():
            return active
        where = "no data folder at" if not self.data_dir.exists() else "no active policy in"
        raise ConfigError(
            f'{where} {self.data_dir}: run `epmem init --owner "YOUR NAME"` (your own delegate) or '
            f"`epmem demo` (the example owner), or make a policy file active: epmem policy use FILE"
        )

    @property
    def qdrant_dir(self) -> Path:
        return self.data_dir / "qdrant"

    @field_validator("audit_url", "database_url")
    @classmethod
    def _a_server(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        if not is_postgres_url(value.get_secret_value()):
            raise ValueError("a postgresql:// URL (a PostgreSQL server), or unset")
        return value

    @property
    def audit_db(self) -> Path:
        return self.data_dir / "audit.sqlite"

    @property
    def audit_target(self) -> Path | str:
        """Where the audit log is: EPMEM_AUDIT_URL's server, else the data folder's file. One of
        several owners (``owner``) has their chain in a schema named ``owner_<id>`` (never
        ``public``, where the folder's own owner's chain is, whatever an owner is called)."""
        server = self.audit_url or self.database_url
        if server is None:
            return self.audit_db
        url = server.get_secret_value()
        return with_schema(url, f"owner_{self.owner}") if self.owner is not None else url

    @property
    def state_db(self) -> Path:
        return self.data_dir / "state.sqlite"

    @property
    def state_target(self) -> Path | str:
        """Where the state database is: EPMEM_DATABASE_URL's server (a schema apart from the
        audit chain's, as the two are files apart), else the data folder's file."""
        if self.database_url is None:
            return self.state_db
        url = self.database_url.get_secret_value()
        owner = with_schema(url, f"owner_{self.owner}") if self.owner is not None else url
        return with_schema(owner, "state")

    @property
    def shared_state(self) -> bool:
        """The state is on a server, where other workers may serve the same owner."""
        return self.database_url is not None

    @property
    def worker_lease(self) -> timedelta | None:
        """How long a silent worker is still alive (bot/workers.py); None: one process, no lease."""
        return timedelta(seconds=self.worker_lease_s) if self.shared_state else None
