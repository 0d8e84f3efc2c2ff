"""MirrorMaker 2 in dedicated mode: one flow from a source cluster to a standby.

The flow copies what a standby needs to take over (docs/operations.md, "A standby
cluster"): every topic of the prefix (jobs.intake, jobs.exec.*, jobs.events, the
compacted jobs.status and the processors' changelogs) under the same names
(IdentityReplicationPolicy), their configs, and the consumer groups' offsets, translated
to the target's offsets (MM2's checkpoints, written into the groups while they are idle
there). Its consumer reads committed records only: an aborted transaction of the source is
never copied, and commit markers are not records, so a target's offsets differ from the
source's (the processors' state follows the changelog's cluster and topic ids, not its
offsets: pipeline/state/validity.py).

A flow lives in one home folder: ``mm2.properties``, ``pid`` and ``logs/server.log``. The
process runs in its own session and outlives the command that started it; ``down`` ends
it. Health is read from MM2's own status topic on the target (each connector and task
RUNNING) and how far it is behind from its offsets topic there.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from jobstream._ops.kafka import jars
from jobstream._ops.kafka.cluster import _alive
from jobstream._pipeline.errors import BrokerError, ConfigurationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.tenancy import owner_of_topic

log = logging.getLogger(__name__)

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"
CONNECTORS = ("MirrorSourceConnector", "MirrorCheckpointConnector")
"""The connectors a healthy flow runs (heartbeats are off: the pipeline has its own)."""
SYNC_INTERVAL_S = 1
"""How often group offsets are checkpointed and written into the idle groups, and the
source task's offsets flushed: what a failover may re-read is bounded by it."""
_ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Flow:
    """One direction of mirroring: ``source`` to ``target``."""

    source: str
    """The source cluster's alias (in MM2's internal topic names)."""
    source_bootstrap: str
    target: str
    target_bootstrap: str
    topics: str
    """A regular expression of the topic names copied."""
    groups: str
    """A regular expression of the consumer groups whose offsets are copied."""
    replication: int = 1
    """The replication factor of the topics MM2 creates on the target."""
    heap_mb: int = 256

    def __post_init__(self) -> None:
        for name in ("source", "target"):
            if not _ALIAS.match(getattr(self, name)):
                raise BrokerError(f"--{name}-alias {getattr(self, name)!r}: letters, digits, "
                                  "'-' and '_' only, starting with a letter or digit")  # fmt: skip
        if self.source == self.target:
            raise BrokerError(f"the source and target aliases are both {self.source!r}")
        for name in ("topics", "groups"):
            try:
                re.compile(getattr(self, name))
            except re.error as exc:
                raise BrokerError(f"--{name} {getattr(self, name)!r}: {exc}") from None

    @property
    def offsets_topic(self) -> str:
        """Where, on the target, MM2 keeps how far it copied each source partition."""
        return f"mm2-offsets.{self.source}.internal"

    @property
    def status_topic(self) -> str:
        return f"mm2-status.{self.source}.internal"

    @classmethod
    def of_deployment(cls, prefix: str, **kwargs: Any) -> Flow:
        """The flow of one jobstream deployment (JOBSTREAM_TOPIC_PREFIX ``prefix``): its
        topics (``<prefix>jobs.*``) and its processors' and workers' groups
        (``<prefix>jobstream.*``)."""
        escaped = re.escape(prefix)
        return cls(topics=rf"{escaped}jobs\..*", groups=rf"{escaped}jobstream\..*", **kwargs)


def mm2_properties(flow: Flow) -> str:
    """The dedicated MirrorMaker's configuration of ``flow``."""
    s, t, rf = flow.source, flow.target, flow.replication
    settings: dict[str, object] = {
        "clusters": f"{s},{t}",
        f"{s}.bootstrap.servers": flow.source_bootstrap,
        f"{t}.bootstrap.servers": flow.target_bootstrap,
        f"{s}->{t}.enabled": "true",
        f"{t}->{s}.enabled": "false",
        f"{s}->{t}.topics": flow.topics,
        f"{s}->{t}.groups": flow.groups,
        # Same names on the standby: the pipeline runs there unchanged. It cannot tell a
        # copied topic from its own, so a flow never runs both ways at once.
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        # An aborted transaction of the source is not copied.
        f"{s}.consumer.isolation.level": "read_committed",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": SYNC_INTERVAL_S,
        "emit.checkpoints.interval.seconds": SYNC_INTERVAL_S,
        f"{t}.offset.flush.interval.ms": SYNC_INTERVAL_S * 1000,
        # A sync every 10 records of a partition: a translated group offset re-reads at
        # most that many records, which the pipeline's ids make harmless (ADR 0012).
        "offset.lag.max": 10,
        "refresh.topics.interval.seconds": 5,
        "refresh.groups.interval.seconds": 5,
        "emit.heartbeats.enabled": "false",
        "sync.topic.acls.enabled": "false",
        "tasks.max": 1,
        "replication.factor": rf,
        "offset-syncs.topic.replication.factor": rf,
        "checkpoints.topic.replication.factor": rf,
        "heartbeats.topic.replication.factor": rf,
        f"{t}.offset.storage.replication.factor": rf,
        f"{t}.status.storage.replication.factor": rf,
        f"{t}.config.storage.replication.factor": rf,
        f"{t}.offset.storage.partitions": 1,
        f"{t}.status.storage.partitions": 1,
        "plugin.discovery": "service_load",
    }
    # A properties file reads a backslash as an escape: the patterns' own are doubled.
    return "".join(f"{key}={str(value).replace(chr(92), chr(92) * 2)}\n"
                   for key, value in settings.items())  # fmt: skip


class Mirror:
    """Start, stop and inspect the flow kept in ``home``."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home).resolve()
        self.pid_file = self.home / "pid"
        self.flow_file = self.home / "flow.json"
        self.properties = self.home / "mm2.properties"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / "server.log"

    def flow(self) -> Flow | None:
        if not self.flow_file.exists():
            return None
        return Flow(**json.loads(self.flow_file.read_text()))

    def pid(self) -> int | None:
        if not self.pid_file.exists():
            return None
        pid = int(self.pid_file.read_text())
        return pid if _alive(pid) else None

    def up(self, flow: Flow, *, timeout_s: float = 90.0) -> int:
        """Start the flow (idempotent for the same flow) and wait until it is healthy;
        the MirrorMaker's pid."""
        running = self.pid()
        if running is not None:
            if self.flow() != flow:
                raise BrokerError(f"another flow runs from {self.home} (pid {running}); "
                                  "run `jobstream kafka mirror down` first")  # fmt: skip
            return running
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        self.flow_file.write_text(json.dumps(flow.__dict__, indent=2))
        self.properties.write_text(mm2_properties(flow))
        # It logs into logs/server.log, through the brokers' log4j2 file.
        command = jars.java_command(MAIN_CLASS, str(self.properties), "--clusters", flow.target,
                                    logs=self.home / "logs", heap_mb=flow.heap_mb)  # fmt: skip
        with open(self.home / "logs" / "stdout.log", "ab") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL,
                                       start_new_session=True)  # fmt: skip
        self.pid_file.write_text(str(process.pid))
        log.info("started MirrorMaker %s->%s pid=%d", flow.source, flow.target, process.pid)
        self.wait_healthy(flow, timeout_s=timeout_s)
        return process.pid

    def wait_healthy(self, flow: Flow, *, timeout_s: float) -> None:
        since_ms = int(self.pid_file.stat().st_mtime * 1000)
        deadline = time.monotonic() + timeout_s
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            if self.pid() is None:
                raise BrokerError(f"MirrorMaker exited during start-up; last lines of "
                                  f"{self.log_path}:\n{self.log_tail()}")  # fmt: skip
            states = task_states(flow, since_ms=since_ms)
            if healthy(states):
                return
            time.sleep(0.5)
        raise BrokerError(f"MirrorMaker was not healthy within {timeout_s:.0f} s (states: "
                          f"{states}); last lines of {self.log_path}:\n"
                          f"{self.log_tail()}")  # fmt: skip

    def down(self, *, timeout_s: float = 30.0, kill: bool = False) -> int | None:
        """Stop the MirrorMaker (SIGTERM, SIGKILL after ``timeout_s``); its pid, if it ran."""
        pid = self.pid()
        if pid is None:
            return None
        os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            log.warning("MirrorMaker did not stop in %.0f s; killing it", timeout_s)
            os.kill(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.05)
        self.pid_file.unlink(missing_ok=True)
        return pid

    def log_tail(self, lines: int = 25) -> str:
        texts: list[str] = []
        for path in (self.home / "logs" / "stdout.log", self.log_path):
            if path.exists():
                texts.extend(path.read_text(errors="replace").splitlines()[-lines:])
        return "\n".join(texts[-lines:]) or "(no log output)"


def healthy(states: Mapping[str, str]) -> bool:
    """Whether every connector of :data:`CONNECTORS` runs, the source's task too, and no
    task failed (the checkpoint connector has a task only once a group is there to copy)."""
    return (all(states.get(f"connector-{name}") == "RUNNING" for name in CONNECTORS)
            and states.get("task-MirrorSourceConnector-0") == "RUNNING"
            and "FAILED" not in states.values())  # fmt: skip


def task_states(flow: Flow, timeout_s: float = 5.0, *, since_ms: int = 0) -> dict[str, str]:
    """Each connector's and task's latest state from MM2's status topic on the target
    (``connector-<name>``, ``task-<name>-<n>`` -> RUNNING, FAILED, ...), as written since
    ``since_ms`` (a MirrorMaker started again finds its predecessor's there); {} before
    the topic exists."""
    states: dict[str, str] = {}
    for key, value, at_ms in _read_all(flow.target_bootstrap, flow.status_topic, timeout_s):
        if at_ms < since_ms:
            continue
        name = key.decode().removeprefix("status-")
        if not name.startswith(("connector-", "task-")):
            continue  # a topic's record: which connector copies it
        if value is None:
            states.pop(name, None)
            continue
        states[name] = json.loads(value).get("state", "?")
    return states


def records_behind(flow: Flow, timeout_s: float = 10.0) -> dict[tuple[str, int], int]:
    """Each source partition of the flow's topics -> the committed records MM2 has not
    copied yet, as far as its last flushed offsets say (flushed every second)."""
    copied: dict[tuple[str, int], int] = {}
    for key, value, _ in _read_all(flow.target_bootstrap, flow.offsets_topic, timeout_s):
        parts = json.loads(key)
        where = parts[1] if isinstance(parts, list) and len(parts) == 2 else {}
        if value is None or where.get("cluster") != flow.source:
            continue
        copied[(where["topic"], int(where["partition"]))] = int(json.loads(value)["offset"])
    pattern = re.compile(flow.topics)
    consumer = _reader(flow.source_bootstrap)
    try:
        topics = consumer.list_topics(timeout=timeout_s).topics
        starts, ends = {}, {}
        for name, topic in sorted(topics.items()):
            if not pattern.fullmatch(name):
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, p)
                low, high = consumer.get_watermark_offsets(tp, timeout=timeout_s, cached=False)
                done = copied.get((name, p))
                starts[(name, p)] = low if done is None else max(low, done + 1)
                ends[(name, p)] = high
        return _count_committed(consumer, starts, ends, timeout_s)
    finally:
        consumer.close()


def _count_committed(consumer: Consumer, starts: dict[tuple[str, int], int],
                     ends: dict[tuple[str, int], int],
                     timeout_s: float) -> dict[tuple[str, int], int]:  # fmt: skip
    """The committed records of each partition from its start to its end. An offset gap
    may hold only commit markers and aborted records, which a read_committed read skips:
    every gap is read, all partitions at once. A partition whose read stops short of its
    end (an open transaction) counts at least one."""
    counts = dict.fromkeys(starts, 0)
    reading = {tp: end for tp, end in ends.items() if starts[tp] < end}
    if not reading:
        return counts
    consumer.assign([TopicPartition(t, p, starts[(t, p)]) for t, p in reading])
    deadline = time.monotonic() + timeout_s
    try:
        while reading and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=0.2):
                if message.error() is None:
                    counts[(message.topic() or "", message.partition() or 0)] += 1
            for tp in consumer.position([TopicPartition(t, p) for t, p in reading]):
                if tp.offset >= reading[(tp.topic, tp.partition)]:
                    reading.pop((tp.topic, tp.partition))
        for short in reading:
            counts[short] = max(counts[short], 1)
        return counts
    finally:
        consumer.unassign()


def offsets_not_synced(flow: Flow, timeout_s: float = 10.0) -> list[str]:
    """The flow's groups' partitions whose offset on the target is not yet the copy of
    the source's, among those a group has read to the end on the source (``group
    topic[partition]``): [] once a pipeline stopped on the source may start on the
    target where it left off. A translated offset may stop before a commit marker, which
    the target does not have: one short of the end is caught up when the source's was."""
    source = clients.admin_client(flow.source_bootstrap, quiet=True)
    target = clients.admin_client(flow.target_bootstrap, quiet=True)
    listed = source.list_consumer_groups(request_timeout=timeout_s).result(timeout_s)
    pattern = re.compile(flow.groups)
    groups = sorted(g.group_id for g in listed.valid if pattern.fullmatch(g.group_id))
    probes = (_reader(flow.source_bootstrap), _reader(flow.target_bootstrap))
    short = []
    try:
        for group in groups:
            there = _group_offsets(target, group, timeout_s)
            for tp in _group_offsets(source, group, timeout_s).values():
                _, source_end = probes[0].get_watermark_offsets(tp, timeout=timeout_s,
                                                                cached=False)  # fmt: skip
                unread = source_end - tp.offset
                if tp.offset < 0 or unread > 1:
                    continue  # not at its end: nothing exact to compare
                _, target_end = probes[1].get_watermark_offsets(tp, timeout=timeout_s,
                                                                cached=False)  # fmt: skip
                copied = there.get((tp.topic, tp.partition))
                if copied is None or copied.offset < target_end - unread:
                    short.append(f"{group} {tp.topic}[{tp.partition}]")
    finally:
        for probe in probes:
            probe.close()
    return short


def timers_inputs(bootstrap: str, prefix: str, timeout_s: float = 10.0) -> list[str]:
    """Every topic the timers' group reads on the cluster at ``bootstrap``: jobs.intake,
    jobs.retry and each owner's intake topic (pipeline/tenancy.py)."""
    consumer = _reader(bootstrap)
    try:
        names = consumer.list_topics(timeout=timeout_s).topics
    finally:
        consumer.close()
    doors = sorted(name for name in names if owner_of_topic(prefix, name) is not None)
    return [f"{prefix}jobs.intake", f"{prefix}jobs.retry", *doors]


def rewind_group(bootstrap: str, group: str, topics: Sequence[str], to_ms: int,
                 timeout_s: float = 10.0) -> int:  # fmt: skip
    """Move ``group``'s offsets on each of ``topics`` back to its first record written at
    or after ``to_ms`` (record times are kept by the mirror), where that lies before the
    group's offset; the partitions moved. The group must have no member: a standby's,
    before its pipeline starts, so that the timers read again what was submitted, retried
    or passed through an owner's door just before the loss (ADR 0012)."""
    admin = clients.admin_client(bootstrap, quiet=True)
    committed = _group_offsets(admin, group, timeout_s)
    consumer = _reader(bootstrap)
    moved = []
    try:
        for topic in topics:
            partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
            asked = [TopicPartition(topic, p, to_ms) for p in partitions]
            for tp in consumer.offsets_for_times(asked, timeout=timeout_s):
                if tp.offset < 0:  # nothing written since: stays where it is
                    continue
                now = committed.get((topic, tp.partition))
                if now is None or now.offset < 0 or tp.offset < now.offset:
                    moved.append(TopicPartition(topic, tp.partition, tp.offset))
    finally:
        consumer.close()
    if moved:
        request = [ConsumerGroupTopicPartitions(group, moved)]
        admin.alter_consumer_group_offsets(request, request_timeout=timeout_s)[group].result(
            timeout_s)
    return len(moved)


def _group_offsets(admin: AdminClient, group: str,
                   timeout_s: float) -> dict[tuple[str, int], TopicPartition]:  # fmt: skip
    request = [ConsumerGroupTopicPartitions(group)]
    try:
        found = admin.list_consumer_group_offsets(request, request_timeout=timeout_s)[group]
        partitions = found.result(timeout_s).topic_partitions or []
    except KafkaException:
        return {}  # the group is not there (yet)
    return {(tp.topic, tp.partition): tp for tp in partitions}


def _reader(bootstrap: str, **overrides: str | int | bool) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "jobstream-mirror-probe",
                     "enable.auto.commit": False, "isolation.level": "read_committed",
                     "log_level": 0, **overrides})  # fmt: skip


def _read_all(bootstrap: str, topic: str,
              timeout_s: float) -> list[tuple[bytes, bytes | None, int]]:  # fmt: skip
    """Every record of ``topic`` up to its end now (as far as ``timeout_s`` allows), as
    (key, value, timestamp ms); [] when it does not exist."""
    try:
        scan = TopicScan(_reader(bootstrap, **{"enable.partition.eof": True}), topic,
                         timeout_s=timeout_s)  # fmt: skip
    except ConfigurationError:
        return []
    except KafkaException as exc:
        raise BrokerError(f"{bootstrap} did not answer: {exc}") from None
    with scan:
        return [(message.key() or b"", message.value(), message.timestamp()[1])
                for batch in scan for message in batch]  # fmt: skip
