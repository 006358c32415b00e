"""Settings from the environment: one explicit object, passed down, never a global."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_POLICY = PACKAGE_ROOT / "policies" / "example.yaml"
ACTIVE_POLICY_NAME = "policy.yaml"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EPMEM_", extra="ignore")

    data_dir: Path = Path("data")
    #: explicit policy file; when unset, the data folder's active policy, then the example.
    policy: Path | None = None
    llm_backend: Literal["rules", "openai"] = "rules"
    #: the tenant id every stored point carries; several owners can share one Qdrant.
    owner_id: str = "default"
    max_message_chars: int = Field(default=4000, ge=1)
    log_level: str = "INFO"
    log_format: Literal["auto", "json", "console"] = "auto"

    def policy_path(self) -> Path:
        """Explicit EPMEM_POLICY wins; else what `epmem load` made active; else the example."""
        if self.policy is not None:
            return self.policy
        active = self.data_dir / ACTIVE_POLICY_NAME
        return active if active.exists() else EXAMPLE_POLICY

    @property
    def qdrant_dir(self) -> Path:
        return self.data_dir / "qdrant"

    @property
    def audit_db(self) -> Path:
        return self.data_dir / "audit.sqlite"

    @property
    def state_db(self) -> Path:
        return self.data_dir / "state.sqlite"
