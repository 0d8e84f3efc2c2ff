"""One-time approval links: a token that completes one waiting step, and nothing else.

A link's token is the step's job id and an HMAC-SHA256 of the owner, the workflow id and
the job id under the API's link secret (``JOBSTREAM_API_LINK_SECRET``; without one, a
secret of this process: its links end with it). The token names no owner and grants no
read beyond that step's prompt; it completes the step once, since the signal it sends is
addressed to that step alone (``WorkflowSignalled.step``) and a step ends only once: a
second use finds it ended (409 here, and the timers drop a signal for a step no longer
waiting). Pure: no I/O.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

_MAC_CHARS = 32


def _mac(secret: bytes, owner: str, workflow_id: str, job_id: str) -> str:
    message = "\x00".join(("approval", owner, workflow_id, job_id)).encode()
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode()[:_MAC_CHARS]


def link_token(secret: bytes, owner: str, workflow_id: str, job_id: str) -> str:
    """The token of the link that completes ``job_id``, a wait step of that workflow."""
    return f"{job_id}.{_mac(secret, owner, workflow_id, job_id)}"


def job_of(token: str) -> str | None:
    """The job id a token names (unchecked), or None for a token of another shape."""
    job_id, dot, mac = token.partition(".")
    return job_id if dot and job_id and len(mac) == _MAC_CHARS else None


def holds(secret: bytes, token: str, owner: str, workflow_id: str) -> bool:
    """Whether ``token`` is the link of its job in that owner's workflow (constant time)."""
    job_id = job_of(token)
    if job_id is None:
        return False
    return hmac.compare_digest(token, link_token(secret, owner, workflow_id, job_id))
