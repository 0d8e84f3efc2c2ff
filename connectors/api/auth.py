"""Bearer tokens, each acting for one owner or for all (an admin).

Only SHA-256 digests of the tokens are configured. A presented token is hashed and
compared with every configured digest in constant time (``hmac.compare_digest``, and no
early exit), so neither the comparison nor the number of digests tried tells a caller
how close a guess came.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

from jobstream._pipeline.errors import ValidationError


@dataclass(frozen=True)
class Principal:
    """Who a request acts for."""

    owner: str | None
    """The owner an owner token acts for; None for an admin."""
    admin: bool = False
    name: str | None = None
    """An admin token's name, if configured: the actor its commands record."""
    token: str = field(default="", compare=False)
    """Which token it is (a prefix of its digest): what per-token quotas count by."""

    @property
    def actor(self) -> str:
        """Who its commands, submissions and access-log lines name: ``api:<owner>`` for an
        owner token, ``api:admin:<name>`` for a named admin token (``api:admin``
        without a name)."""
        if self.admin:
            return f"api:admin:{self.name}" if self.name else "api:admin"
        return f"api:{self.owner}"

    def sees(self, owner: str) -> bool:
        return self.admin or owner == self.owner

    def owner_of(self, given: str | None, field: str = "owner") -> str:
        """The owner a submission acts for: the one an admin token names, or the owner
        token's own (which it may name); ValidationError naming ``field`` otherwise."""
        if self.admin:
            if given is None:
                raise ValidationError(field, "is required with an admin token")
            return given
        if given is not None and given != self.owner:
            raise ValidationError(field, "must be the token's own owner (or left out)")
        return self.owner or ""


def same_key(given: str | None, header: str | None, field: str = "idempotency_key") -> str | None:
    """The idempotency key of a body (``given``) and its Idempotency-Key ``header``, which
    must agree when both are there; ValidationError naming ``field`` otherwise."""
    if header is not None and given not in (None, header):
        raise ValidationError(field, "differs from the Idempotency-Key header")
    return header if header is not None else given


TOKEN_ID_CHARS = 16


def hash_token(token: str) -> str:
    """The SHA-256 hex digest configured for ``token``."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenTable:
    def __init__(self, owners: Mapping[str, str], admins: Mapping[str, str | None]) -> None:
        self._entries = [(digest, Principal(owner, token=digest[:TOKEN_ID_CHARS]))
                         for digest, owner in owners.items()]  # fmt: skip
        self._entries += [(digest, Principal(None, admin=True, name=name,
                                             token=digest[:TOKEN_ID_CHARS]))
                          for digest, name in admins.items()]  # fmt: skip

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, token: str) -> Principal | None:
        digest = hash_token(token)
        found = None
        for configured, principal in self._entries:
            if hmac.compare_digest(configured, digest):
                found = principal
        return found
