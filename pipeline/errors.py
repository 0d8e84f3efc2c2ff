"""Every error jobstream raises derives from JobstreamError.

Retryability is a property of the error: handlers raise NonRetryableError (or a subclass)
when another attempt cannot help, and the retry router reads ``retryable``.
"""

from __future__ import annotations


class JobstreamError(Exception):
    """Root of jobstream's errors."""

    retryable: bool = True


class ConfigurationError(JobstreamError):
    """A setting is missing or invalid; the process stops at start."""

    retryable = False


class SerializationError(JobstreamError):
    """An event could not be encoded."""

    retryable = False


class DeserializationError(JobstreamError):
    """A record could not be decoded; ``raw`` keeps its bytes for the dead-letter path."""

    retryable = False

    def __init__(self, reason: str, *, raw: bytes | None, topic: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw
        self.topic = topic


class TopicMismatchError(JobstreamError):
    """An existing topic's partition count or cleanup policy differs from the design."""

    retryable = False


class TopicRefusedError(JobstreamError):
    """The broker refused to create topics (a name that collides with an existing one)."""

    def __init__(self, refused: dict[str, str]) -> None:
        super().__init__(
            "topics refused: " + "; ".join(f"{name}: {why}" for name, why in refused.items())
        )
        self.refused = refused
        """Each refused topic and why."""


class StoreError(JobstreamError):
    """A partition store's files could not be written or opened (a full disk, an I/O
    error); the changelog still holds the state, so the processor restores it again."""


class BrokerError(JobstreamError):
    """The local Kafka broker could not be provisioned, started or reached."""


class ValidationError(JobstreamError):
    """A submission or command is invalid; ``field`` names what is wrong."""

    retryable = False

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class InvalidArgumentError(ValidationError, ValueError):
    """A handler passed a bad value to the worker's API (``ctx.progress(2)``): a ValueError
    too, as Python code expects of a bad argument; ``field`` names the argument."""


class NonRetryableError(JobstreamError):
    """Raised by a handler when another attempt cannot succeed."""

    retryable = False


class AuthorizationError(JobstreamError):
    """The broker refused an operation for want of an ACL: names the resource, its name
    and the operation, so that whoever grants it knows what to grant."""

    retryable = False

    def __init__(self, resource: str, name: str, operation: str, *, code: str,
                 principal: str | None = None) -> None:  # fmt: skip
        who = f"principal User:{principal}" if principal else "this principal"
        super().__init__(
            f"not authorized: {who} may not {operation} {resource} {name!r} ({code}); "
            "grant it an ACL (docs/kafka-security.md, `jobstream kafka acls`)"
        )
        self.resource = resource
        self.name = name
        self.operation = operation
        self.code = code
