"""Process settings, read once from the environment (prefix ``JOBSTREAM_``).

One place maps settings to librdkafka keys (:meth:`Settings.kafka_config`), so the same
code runs against the local broker and a secured production cluster. A bad value stops
the process at start: :func:`load_settings` turns pydantic's error into a
ConfigurationError that names the environment variable.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, Literal, TypeVar

import orjson
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from jobstream._pipeline.durations import DurationError, parse_duration
from jobstream._pipeline.errors import ConfigurationError

ENV_PREFIX = "JOBSTREAM_"

# A job's parameters may reach 1 MB; the Avro envelope around them is small.
MAX_MESSAGE_BYTES = 2 * 1024 * 1024


def split_list(value: object) -> object:
    """A list setting given as text: a JSON array, or items separated by commas."""
    if isinstance(value, str):
        if value.lstrip().startswith("["):
            return orjson.loads(value)
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class Settings(BaseSettings):
    """Everything a jobstream process reads from its environment."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    bootstrap_servers: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers.")
    topic_prefix: str = Field("", description="Prepended to every topic name, e.g. 'prod.'.")

    timer_partitions: int = Field(
        6, ge=1, description="Partitions of jobs.intake, jobs.retry and the timer changelog."
    )
    exec_partitions: int = Field(6, ge=1, description="Partitions of each execution topic.")
    fire_lead: Annotated[int, NoDecode] = Field(
        1000, ge=0, le=10_000,
        description="How long before its due instant the timers hand a job to its "
        "execution topic (a duration, e.g. 500ms; in ms once read): the worker holds it "
        "and starts it on the instant. 1s by default; 0 fires at the due instant "
        "(docs/lifecycle.md).",
    )
    fire_lead_most: Annotated[int, NoDecode] = Field(
        10_000, ge=0, le=10_000,
        description="How far ahead the timers fire at most when the jobs due within the "
        "next seconds need more than the fire lead to reach their workers in time (a burst, "
        "the top of the hour; a duration; in ms once read). At or below the fire lead, or "
        "with a fire lead of 0, the lead never changes (docs/lifecycle.md, \"Bursts\").",
    )
    clock_correction: bool = Field(
        True,
        description="Read the cluster's clock: this host's plus the offset its clock probes "
        "measure against the brokers' stamps (docs/reliability.md, \"Clocks\"). Off: the "
        "host's clock as it is; the offset is still measured and exported.",
    )
    clock_probe_interval: Annotated[int, NoDecode] = Field(
        10_000, ge=100, le=3_600_000,
        description="How often each process probes the brokers' clock (a duration; in ms "
        "once read).",
    )
    clock_offset_warn: Annotated[int, NoDecode] = Field(
        500, ge=1,
        description="A host clock off the cluster's by more than this (a duration; in ms "
        "once read) is logged as a warning, once a minute while it lasts.",
    )
    markers_trusted_before: int | None = Field(
        None, ge=0,
        description="On a standby taking over from a lost cluster (epoch ms): a fired "
        "job's marker written at or after this instant does not make a submission of the "
        "job a no-op, and the job fires again, since its execution may not have been "
        "copied (ADR 0012). Unset: every marker holds.",
    )
    markers_trusted_from: int | None = Field(
        None, ge=0,
        description="With JOBSTREAM_MARKERS_TRUSTED_BEFORE (epoch ms): markers written at "
        "or after this instant hold again, being the standby's own, written since it took "
        "over. Unset: from when the timers process started.",
    )
    nice: int = Field(
        0, ge=0, le=19,
        description="The niceness a process takes at its start (0-19; one started nicer "
        "keeps its own): under a full CPU, the processes no start waits on (the status "
        "processor, the retry router) yield to the timers and workers (docs/scaling.md).",
    )
    events_partitions: int = Field(6, ge=1, description="Partitions of jobs.events.")
    dlq_partitions: int = Field(3, ge=1, description="Partitions of each dead-letter topic.")
    workers_partitions: int = Field(1, ge=1, description="Partitions of jobs.workers.")
    results_partitions: int = Field(6, ge=1, description="Partitions of jobs.results.")
    results_retention: Annotated[int, NoDecode] = Field(
        7 * 86_400_000, ge=60_000,
        description="How long jobs.results keeps a result (a duration, e.g. 7d; in ms "
        "once read): the topic is compacted (a job's latest result) and deleted after it.",
    )
    max_result_bytes: int = Field(
        1024 * 1024, ge=1, le=MAX_MESSAGE_BYTES - 64 * 1024,
        description="Largest result a handler may return (bytes, as encoded); a larger "
        "one fails its run, non-retryable, naming this limit.",
    )
    logs_partitions: int = Field(6, ge=1, description="Partitions of jobs.logs.")
    logs_retention: Annotated[int, NoDecode] = Field(
        7 * 86_400_000, ge=60_000,
        description="How long jobs.logs keeps a run's log lines (a duration, e.g. 7d; in ms "
        "once read).",
    )
    max_log_lines: int = Field(
        1000, ge=1, description="Most log lines kept of one run; the first ones are kept."
    )
    max_log_bytes: int = Field(
        256 * 1024, ge=1024, le=MAX_MESSAGE_BYTES - 64 * 1024,
        description="Most bytes of log lines (as JSON lines) kept of one run; the first "
        "ones are kept.",
    )
    replication_factor: int = Field(1, ge=1, description="Replication factor of new topics.")
    min_insync_replicas: int | None = Field(
        None, ge=1,
        description="min.insync.replicas of the topics jobstream creates (unset: the "
        "broker's default); at most the replication factor.",
    )
    max_execution_topics: int = Field(
        500, ge=1,
        description="Most execution topics (jobs.exec.*) of this prefix in the cluster: the "
        "timers create none beyond it, and a job routed to one not created is refused to "
        "jobs.intake.dlq.",
    )
    job_types: Annotated[tuple[str, ...], NoDecode] = Field(
        ("data.process", "image.render", "report.generate"),
        description="Job types whose execution and dead-letter topics are created up front.",
    )

    retry_defaults: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='Per-type retry policy overrides as JSON, e.g. {"image.render": '
        '{"max_attempts": 5}}; the key "*" changes the default of every type.',
    )

    metrics_host: str = Field(
        "127.0.0.1", description="Interface the /metrics and /healthz port binds (0.0.0.0: all)."
    )

    owner_weights: dict[str, float] = Field(
        default_factory=dict,
        description="Each owner's weight when more jobs are due than one firing batch holds, "
        'as JSON, e.g. {"tenant-a": 3}; "*" sets the default of owners not named (else 1).',
    )

    # -- fleet-wide concurrency limits (pipeline/concurrency.py) -------------------------
    concurrency_limits: Annotated[dict[str, int], NoDecode] = Field(
        default_factory=dict,
        description="Most runs at once of a job type across every worker, e.g. "
        "'report.generate=4,image.render=2' (or a JSON object); read at start by the timers "
        "and the workers, which must agree. Types not named have no limit.",
    )

    @field_validator("concurrency_limits", mode="before")
    @classmethod
    def _parse_limits(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("{"):
            return orjson.loads(value)
        limits: dict[str, int] = {}
        for part in (p.strip() for p in value.split(",")):
            if not part:
                continue
            job_type, sep, number = (s.strip() for s in part.partition("="))
            if not sep or not job_type:
                raise ValueError(f"expected type=limit[,type=limit...], got {part!r}")
            if not number.isdigit():
                raise ValueError(f"the limit of {job_type} must be a whole number, got {number!r}")
            if job_type in limits:
                raise ValueError(f"{job_type} is limited twice")
            limits[job_type] = int(number)
        return limits

    # ------------------------------------------------------------------------------------

    schema_registry_url: str | None = Field(
        None, description="Confluent Schema Registry; unset means Avro single-object encoding."
    )

    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: SecretStr | None = None
    intake_owner: str | None = Field(
        None,
        description="Submit to this owner's own intake topic (jobs.intake.owner.<owner>) "
        "rather than jobs.intake: what a process logged in as the owner's principal "
        "(jobstream-owner-<owner>) may write. Records naming another owner are refused "
        "before they are sent (docs/kafka-security.md).",
    )
    librdkafka: dict[str, str] = Field(
        default_factory=dict,
        description="Further librdkafka settings as a JSON object, passed through as they are.",
    )

    @field_validator("results_retention", "logs_retention", "fire_lead", "fire_lead_most",
                     "clock_probe_interval",
                     "clock_offset_warn", mode="before")
    @classmethod
    def _parse_duration(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str):
            return value
        try:
            return parse_duration(value, option=str(info.field_name))
        except DurationError as exc:
            raise ValueError(exc.message) from None

    @field_validator("job_types", mode="before")
    @classmethod
    def _split_job_types(cls, value: object) -> object:
        return split_list(value)

    @field_validator("owner_weights")
    @classmethod
    def _check_weights(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {owner: weight for owner, weight in value.items() if not weight > 0}
        if bad:
            raise ValueError(f"weights must be positive numbers, got {bad}")
        return value

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_bootstrap(cls, value: str) -> str:
        for server in value.split(","):
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port...], got {server!r}")
        return value

    @field_validator("min_insync_replicas")
    @classmethod
    def _check_min_insync(cls, value: int | None, info: ValidationInfo) -> int | None:
        replication = info.data.get("replication_factor")
        if value is not None and replication is not None and value > replication:
            raise ValueError(f"{value} exceeds the replication factor ({replication}): "
                             "no write that waits for the in-sync replicas could succeed")
        return value

    @cached_property
    def kafka_config(self) -> dict[str, str | int]:
        """The librdkafka settings shared by every client of this process."""
        config: dict[str, str | int] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
        }
        optional = {
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password.get_secret_value() if self.sasl_password else None,
            "ssl.ca.location": self.ssl_ca_location,
            "ssl.certificate.location": self.ssl_certificate_location,
            "ssl.key.location": self.ssl_key_location,
            "ssl.key.password": (
                self.ssl_key_password.get_secret_value() if self.ssl_key_password else None
            ),
        }
        config.update({key: value for key, value in optional.items() if value is not None})
        config.update(self.librdkafka)
        return config


SettingsT = TypeVar("SettingsT", bound=BaseSettings)


def read_settings(kind: type[SettingsT], **overrides: object) -> SettingsT:
    """Read ``kind`` from the environment, or raise ConfigurationError naming each bad
    variable."""
    try:
        return kind(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"{ENV_PREFIX}{str(err['loc'][0]).upper()}: {err['msg']}" for err in exc.errors()
        )
        # Not chained: pydantic's own error quotes the input, and a value may be a secret
        # (a token pasted where its digest belongs) that a traceback would then print.
        raise ConfigurationError(f"invalid setting: {problems}") from None
    except SettingsError as exc:  # a value that is not valid JSON for a structured field
        field = str(exc).split('"')[1] if '"' in str(exc) else "?"
        raise ConfigurationError(
            f"invalid setting: {ENV_PREFIX}{field.upper()}: {exc.__cause__ or exc}"
        ) from exc


def load_settings(**overrides: object) -> Settings:
    """The process settings; see :func:`read_settings`."""
    return read_settings(Settings, **overrides)
