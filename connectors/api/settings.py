"""The API process's own settings (prefix ``JOBSTREAM_``), beside the engine's Settings.

Tokens are configured as their SHA-256 (hex), never in plain text:
``JOBSTREAM_API_TOKENS='{"<sha256 hex>": "acme", ...}'`` maps each token to the owner it
acts for, and ``JOBSTREAM_API_ADMIN_TOKENS`` lists the hashes of tokens that see every
owner, or maps each to a name (``'{"<sha256 hex>": "ops-alice"}'``) that the commands it
sends record as their actor (``api:admin:ops-alice``). ``jobstream token-hash`` prints
the hash of a token. The CLI's query commands call the API at ``JOBSTREAM_API_URL`` with
``JOBSTREAM_API_TOKEN``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import orjson
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from jobstream._pipeline.config import ENV_PREFIX, MAX_MESSAGE_BYTES, read_settings, split_list
from jobstream._pipeline.durations import parse_duration
from jobstream._pipeline.quotas.model import Quota

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class ApiSettings(BaseSettings):
    """What ``jobstream api`` reads from its environment."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    api_host: str = Field("127.0.0.1", description="Interface to listen on.")
    api_port: int = Field(8080, ge=0, le=65535, description="Port to listen on (0: any).")
    api_tokens: dict[str, str] = Field(
        default_factory=dict, description="SHA-256 hex of a bearer token -> the owner it acts for."
    )
    api_admin_tokens: Annotated[dict[str, str | None], NoDecode] = Field(
        default_factory=dict, description="SHA-256 hex of the tokens that see and change every "
        "owner's jobs: a list, or a JSON object of hash -> the name its commands record."
    )
    api_max_body_bytes: int = Field(
        MAX_MESSAGE_BYTES, ge=1024, description="Largest body of one submission or command."
    )
    api_max_batch_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="Largest body of a batch submission."
    )
    api_max_batch_jobs: int = Field(1000, ge=1, description="Most jobs in one batch.")
    view_dir: Path = Field(Path(".jobstream/views"), description="Where the views' files live.")
    view_retention: Annotated[int, NoDecode] = Field(
        7 * 86_400_000, description="How long ended jobs stay in the views (a duration: 7d)."
    )
    api_url: str = Field("http://127.0.0.1:8080", description="Where the CLI finds the API.")
    api_token: SecretStr | None = Field(None, description="The CLI's bearer token.")
    api_link_secret: SecretStr | None = Field(
        None, description="Signs one-time approval links; the same on every API replica "
        "(none: a secret of this process, whose links end with it)."
    )
    worker_stale_after: Annotated[int, NoDecode] = Field(
        15_000, description="A worker without a heartbeat for this long is stale (15s)."
    )
    # -- the quotas of an owner with no override on jobs.quotas (docs/api.md) ------------
    quota_job_types: int = Field(20, ge=0, description="Most job types of one owner.")
    quota_submit_rate: float = Field(
        1000.0, gt=0, description="Jobs a second one token may submit for an owner."
    )
    quota_submit_burst: int = Field(
        5000, ge=1, description="Jobs one token may submit at once after a quiet spell."
    )
    quota_pending_jobs: int = Field(
        100_000, ge=0, description="Most jobs of one owner that have not ended."
    )
    quota_streams: int = Field(20, ge=0, description="Most live streams open per token.")

    @field_validator("api_tokens")
    @classmethod
    def _check_hashes(cls, value: dict[str, str]) -> dict[str, str]:
        for digest, owner in value.items():
            if not _SHA256_HEX.fullmatch(digest):
                # Nothing of the key is shown: it may be a token pasted by mistake.
                raise ValueError("keys are SHA-256 hex digests of tokens (jobstream "
                                 "token-hash prints one), not tokens")  # fmt: skip
            if not owner.strip():
                raise ValueError("an owner is not blank")
        return value

    @field_validator("api_admin_tokens", mode="before")
    @classmethod
    def _split_admins(cls, value: object) -> dict[str, object]:
        if isinstance(value, str) and value.lstrip().startswith("{"):
            value = orjson.loads(value)
        listed = value if isinstance(value, Mapping) else split_list(value)
        named = dict(listed) if isinstance(listed, Mapping) else dict.fromkeys(listed or ())  # type: ignore[call-overload]
        for digest, name in named.items():
            if not _SHA256_HEX.fullmatch(str(digest)):
                raise ValueError("entries are SHA-256 hex digests of tokens")
            if name is not None and (not isinstance(name, str) or not name.strip()):
                raise ValueError("a name is a non-blank string")
        return named

    @field_validator("view_retention", "worker_stale_after", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        if isinstance(value, str):
            return parse_duration(value, option="duration")
        return value


    def default_quota(self) -> Quota:
        return Quota(job_types=self.quota_job_types, submit_rate=self.quota_submit_rate,
                     submit_burst=self.quota_submit_burst,
                     pending_jobs=self.quota_pending_jobs, streams=self.quota_streams)  # fmt: skip


def load_api_settings(**overrides: object) -> ApiSettings:
    """The API's settings; see :func:`jobstream._pipeline.config.read_settings`."""
    return read_settings(ApiSettings, **overrides)
