"""The least each role of jobstream may do on a secured cluster: the one ACL table.

Each role is one principal (a SCRAM user) and gets only the grants below, derived from
what its code touches: the topics it reads and writes (pipeline/topics.py), its consumer
group, its transactional ids, the topics it creates on demand. ``jobstream kafka acls``
applies them (ops/kafka/principals.py); docs/kafka-security.md shows
:func:`markdown_table`, and a test checks that the page and this table agree.

Two kinds of group appear. A processor's or worker's group is joined and commits
offsets. The readers that assign partitions themselves and commit nothing (status
queries, scans, the views, the DLQ reader) still name a group, which librdkafka looks up
its coordinator for: they get READ on it and nothing is ever committed there.

Operations imply others on the broker: READ and WRITE imply DESCRIBE, so DESCRIBE is
granted only where nothing else is. An idempotent producer needs WRITE on some topic
(Kafka 3.0+), not IDEMPOTENT_WRITE on the cluster; a transactional one also WRITE on
its transactional id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from jobstream._pipeline.runtime.options import processor_group
from jobstream._pipeline.tenancy import OWNER_INTAKE, OWNER_PRINCIPAL
from jobstream._pipeline.topics import PRIORITIES, Topics
from jobstream._pipeline.worker.lane import transactional_prefix, worker_group

ROLES = ("timers", "status", "retry", "triggers", "worker", "api", "client", "console")
"""Every role; a worker's principal is per job type. Beside them, each owner given a door
of its own has a principal (:func:`owner_grants`)."""

SCAN_GROUP_PREFIX = "jobstream.scan."
"""pipeline/kafka/scan.py's readers' groups (no topic prefix; never joined)."""


@dataclass(frozen=True)
class Grant:
    """Operations on one resource (a name, or every name with a prefix) for one role."""

    resource: str
    """TOPIC, GROUP or TRANSACTIONAL_ID."""
    name: str
    prefixed: bool
    """True: every resource whose name starts with ``name``."""
    operations: tuple[str, ...]
    """Kafka's operation names: READ, WRITE, CREATE, DESCRIBE, DESCRIBE_CONFIGS."""
    why: str

    def covers(self, resource: str, name: str, operation: str) -> bool:
        """Whether this grant allows ``operation`` on ``name`` (no implication applied)."""
        matches = name.startswith(self.name) if self.prefixed else name == self.name
        return resource == self.resource and matches and operation in self.operations


def principal(role: str, job_type: str | None = None) -> str:
    """The SCRAM user of a role: ``jobstream-<role>``, a worker's ``jobstream-worker-<type>``."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; the roles are {', '.join(ROLES)}")
    if (role == "worker") != (job_type is not None):
        raise ValueError("a worker's principal is per job type, and only a worker's")
    return f"jobstream-worker-{job_type}" if job_type else f"jobstream-{role}"


def _topic(name: str, ops: tuple[str, ...], why: str, *, prefixed: bool = False) -> Grant:
    return Grant("TOPIC", name, prefixed, ops, why)


def _group(name: str, why: str, *, prefixed: bool = False) -> Grant:
    return Grant("GROUP", name, prefixed, ("READ",), why)


def _transactions(name: str, why: str) -> Grant:
    return Grant("TRANSACTIONAL_ID", name, True, ("WRITE", "DESCRIBE"), why)


def _processor(topics: Topics, name: str, *, changelog: str) -> list[Grant]:
    """What every processor of pipeline/runtime/runner.py needs: its group, its restore
    reader's group, its transactional ids, and its changelog both ways."""
    group = processor_group(topics.settings.topic_prefix, name)
    return [
        _group(group, "the processor's consumer group"),
        _group(f"{group}.restore", "restores its stores from the changelog (never joined)"),
        _transactions(f"{group}.", "one transactional id per instance"),
        _topic(changelog, ("READ", "WRITE"), "its state's changelog: written, restored"),
    ]


def _clock_probes(topics: Topics) -> Grant:
    return _topic(topics.clocks, ("WRITE",), "clock probes, stamped by the broker")


def _readers(topics: Topics) -> list[Grant]:
    """The groups of readers that assign partitions and commit nothing."""
    p = topics.settings.topic_prefix
    return [
        _group(f"{p}jobstream.status-query.", "status queries", prefixed=True),
        _group(SCAN_GROUP_PREFIX, "scans of a whole topic (events of a job)", prefixed=True),
    ]


def grants(role: str, topics: Topics, job_type: str | None = None) -> list[Grant]:
    """The grants of ``role`` (a worker: of ``job_type``) under ``topics``' prefix."""
    principal(role, job_type)  # checks the pair
    p = topics.settings.topic_prefix
    exec_prefix, dlq_prefix = f"{p}jobs.exec.", f"{p}jobs.dlq."
    if role == "timers":
        return [
            *_processor(topics, "timers", changelog=topics.timers_changelog),
            _topic(topics.intake, ("READ", "WRITE"), "submissions and commands; a "
                   "workflow's next steps"),
            _topic(topics.retry, ("READ", "WRITE"), "retries to schedule; a grow's "
                   "handovers between its partitions"),
            _topic(topics.limits, ("READ",), "rate limits"),
            _topic(exec_prefix, ("WRITE", "CREATE", "DESCRIBE_CONFIGS"),
                   "fires to every type's execution topics, made on a type's first job",
                   prefixed=True),
            _topic(topics.events, ("WRITE",), "SCHEDULED, FIRED, CANCELLED ..."),
            _topic(topics.intake_dlq, ("WRITE",), "submissions it cannot read or accept"),
            _topic(f"{p}{OWNER_INTAKE}", ("READ",), "every owner's intake topic: a record "
                   "passed on to jobs.intake, or refused", prefixed=True),
            _topic(topics.control, ("WRITE",), "cancels of runs under way"),
            _group(SCAN_GROUP_PREFIX, "reads jobs.limits whole", prefixed=True),
            _clock_probes(topics),
        ]  # fmt: skip
    if role == "status":
        return [
            *_processor(topics, "status", changelog=topics.status),
            _topic(topics.events, ("READ", "WRITE"), "folds lifecycle events; LOST runs; "
                   "forwards an event written to the wrong partition after a grow"),
            _topic(topics.status_handover, ("READ", "WRITE"), "a grow's handovers between "
                   "its partitions"),
            _topic(topics.intake, ("WRITE",), "releases a workflow's waiting steps"),
            _clock_probes(topics),
        ]
    if role == "retry":
        group = processor_group(p, "retry")
        return [
            _group(group, "the processor's consumer group"),
            _transactions(f"{group}.", "one transactional id per instance"),
            _topic(topics.events, ("READ", "WRITE"), "failed attempts; RETRY_SCHEDULED"),
            _topic(topics.retry, ("WRITE",), "the next attempt, to the timers"),
            _topic(dlq_prefix, ("WRITE", "CREATE", "DESCRIBE_CONFIGS"),
                   "dead letters, to every type's topic, made on first use", prefixed=True),
            _clock_probes(topics),
        ]  # fmt: skip
    if role == "triggers":
        group = processor_group(p, "triggers")
        return [
            _group(group, "the processor's consumer group"),
            _transactions(f"{group}.", "one transactional id per instance"),
            _topic(topics.triggers, ("READ",), "the triggers, followed whole"),
            _group(SCAN_GROUP_PREFIX, "reads jobs.triggers whole", prefixed=True),
            _topic(topics.intake, ("WRITE",), "the jobs its records submit"),
            _topic(topics.triggers_dlq, ("WRITE",), "source records it cannot read"),
            _clock_probes(topics),
        ]  # READ on each trigger's source topic is granted with the trigger (docs/triggers.md)
    if role == "worker":
        assert job_type is not None
        tiers = [topics.execution(job_type, tier) for tier in PRIORITIES]
        own_topics = [*tiers, topics.dead_letter(job_type), topics.control]
        return [
            _group(worker_group(p, job_type), "the type's workers' group"),
            _transactions(transactional_prefix(p, job_type), "one transactional id per worker"),
            *(_topic(t, ("READ",), "its type's executions") for t in tiers),
            *(_topic(t, ("CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"), "made at start when missing")
              for t in own_topics),
            _topic(topics.events, ("WRITE",), "STARTED, HEARTBEAT, SUCCEEDED, FAILED ..."),
            _topic(topics.results, ("WRITE",), "each run's result, with its SUCCEEDED"),
            _topic(topics.logs, ("WRITE",), "each run's log lines, with its outcome"),
            _topic(topics.checkpoints, ("WRITE",), "each job's latest checkpoint"),
            _topic(topics.intake, ("WRITE",), "the children its handlers spawn (ctx.spawn)"),
            _topic(topics.workers, ("WRITE",), "the worker's heartbeat"),
            _topic(topics.control, ("READ",), "cancels of runs under way, read whole"),
            _group(SCAN_GROUP_PREFIX, "reads jobs.control whole", prefixed=True),
            _clock_probes(topics),
        ]  # fmt: skip
    if role == "api":
        return [
            _topic(topics.intake, ("WRITE", "READ"), "submissions and commands; its views"),
            _topic(topics.status, ("READ",), "its views"),
            _topic(topics.events, ("READ", "WRITE"), "its views; a redrive's event"),
            _topic(topics.workers, ("READ",), "its views of the workers"),
            _topic(topics.results, ("READ",), "results: indexed by its views, served whole"),
            _topic(topics.logs, ("READ",), "runs' log lines: indexed by its views, served"),
            _topic(topics.retry, ("WRITE",), "redrives"),
            _topic(topics.limits, ("READ", "WRITE"), "rate limits shown and set"),
            _topic(topics.quotas, ("READ", "WRITE"), "owners' quotas: followed, and set"),
            _topic(topics.triggers, ("READ", "WRITE"), "event triggers: listed, and set"),
            _topic(dlq_prefix, ("READ",), "the dead-letter queue", prefixed=True),
            _group(f"{p}jobstream.views.unused", "its views' reader (never joined)"),
            _group(f"{p}jobstream.dlq.reader", "the DLQ reader (never joined)"),
            _transactions(f"{p}jobstream.dlq.redrive", "redrives, committed in pairs"),
            *_readers(topics),
            _clock_probes(topics),
        ]  # fmt: skip
    if role == "client":
        return [_topic(topics.intake, ("WRITE",), "submissions and commands")]
    return [  # console
        _topic(topics.status, ("READ",), "each job's latest state"),
        _topic(topics.events, ("READ",), "each job's history"),
        _topic(topics.results, ("READ",), "each job's latest result"),
        _topic(topics.logs, ("READ",), "each run's log lines"),
        _topic(topics.checkpoints, ("READ",), "each job's latest checkpoint"),
        *_readers(topics),
    ]


def owner_grants(topics: Topics, owner: str) -> list[Grant]:
    """An owner's principal (``jobstream-owner-<owner>``): its own intake topic and nothing
    else; the timers pass on only the records that name ``owner`` (pipeline/tenancy.py)."""
    name = f"{topics.settings.topic_prefix}{OWNER_INTAKE}{owner}"
    return [_topic(name, ("WRITE",), "its submissions and commands, as this owner only")]


def allowed(found: Iterable[Grant], resource: str, name: str, operation: str) -> bool:
    """Whether ``found`` allows ``operation`` on ``name``, with the broker's implications
    (READ, WRITE imply DESCRIBE)."""
    implied = {operation} | ({"READ", "WRITE"} if operation == "DESCRIBE" else set())
    return any(g.covers(resource, name, op) for g in found for op in implied)


def markdown_table(topics: Topics, job_type: str = "<type>") -> str:
    """The table of docs/kafka-security.md: one row per grant of every role."""
    rows = ["| principal | resource | name | pattern | operations | why |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for role in ROLES:
        of_type = job_type if role == "worker" else None
        for grant in grants(role, topics, of_type):
            rows.append(f"| {principal(role, of_type)} | {grant.resource} | `{grant.name}` | "
                        f"{'prefixed' if grant.prefixed else 'literal'} | "
                        f"{', '.join(grant.operations)} | {grant.why} |")  # fmt: skip
    for grant in owner_grants(topics, "<owner>"):
        rows.append(f"| {OWNER_PRINCIPAL}<owner> | {grant.resource} | `{grant.name}` | literal | "
                    f"{', '.join(grant.operations)} | {grant.why} |")  # fmt: skip
    return "\n".join(rows)
