"""The workflow part of a timer store: step nodes, workflow records, the blocked index.

Key spaces (beside the timers' own ``j``, ``s``, ``o`` and ``q``,
pipeline/model/time_keys.py), where ``<wf>`` is the owner's and then the workflow id's
UTF-8 bytes, each after its length (u16 BE), so that one workflow's keys are one range
whatever characters its names hold, and two owners' workflows of the same id are two
ranges:

- ``n<wf><job id>``: the :class:`StepNode` of a job of the workflow.
- ``w<wf>``: the :class:`WorkflowRecord` (submitted as one unit, cancelled).
- ``b<wf><parent id><child id>``: the blocked index, one key per parent a child still
  waits for; derived from the nodes, so it is not logged and restoring rebuilds it.
- ``g<wf><signal name>``: a signal no step waited for when it came, kept for the first
  that will (pipeline/timers/held.py): the WorkflowSignalled as JSON.

Nodes, records and kept signals go to the timers' changelog under their store key. Their
first byte (``n``, ``w``, ``g``: lower case) never starts a timer id (job ids are upper-case
base32), which is how restoring tells them apart from timer entries.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator

import msgspec
import orjson

from jobstream._pipeline.model.records import WorkflowSignalled
from jobstream._pipeline.state.batch import ChangelogRecord, PartitionBatch
from jobstream._pipeline.workflows.node import StepNode, WorkflowRecord

log = logging.getLogger(__name__)

NODE_PREFIX = b"n"
WORKFLOW_PREFIX = b"w"
WAITING_PREFIX = b"b"
SIGNAL_PREFIX = b"g"
LOGGED_PREFIXES = (NODE_PREFIX, WORKFLOW_PREFIX, SIGNAL_PREFIX)
"""Changelog keys of this module's records (the rest are timer ids)."""

_LENGTH = struct.Struct(">H")
_END = b"\xff"
"""Sorts after every job id byte: the exclusive end of a prefix's range."""


def _sized(text: str) -> bytes:
    raw = text.encode()
    return _LENGTH.pack(len(raw)) + raw


def _workflow(owner: str, workflow_id: str) -> bytes:
    return _sized(owner) + _sized(workflow_id)


def node_key(owner: str, workflow_id: str, job_id: str) -> bytes:
    return NODE_PREFIX + _workflow(owner, workflow_id) + job_id.encode()


def workflow_key(owner: str, workflow_id: str) -> bytes:
    return WORKFLOW_PREFIX + _workflow(owner, workflow_id)


def waiting_key(owner: str, workflow_id: str, parent: str, child: str) -> bytes:
    return WAITING_PREFIX + _workflow(owner, workflow_id) + parent.encode() + child.encode()


def signal_key(owner: str, workflow_id: str, name: str) -> bytes:
    return SIGNAL_PREFIX + _workflow(owner, workflow_id) + name.encode()


_SIGNAL = msgspec.json.Decoder(WorkflowSignalled)


class WorkflowNodes:
    """Reads and writes of step nodes within one partition batch.

    Shares the timer state's transaction and changelog list, so that a release and the
    firing it allows commit together.
    """

    def __init__(self, tx: PartitionBatch, changelog: list[ChangelogRecord]) -> None:
        self.tx = tx
        self.changelog = changelog
        self._nodes: dict[bytes, StepNode | None] = {}

    def get(self, owner: str, workflow_id: str, job_id: str) -> StepNode | None:
        key = node_key(owner, workflow_id, job_id)
        if key not in self._nodes:
            raw = self.tx.get(key)
            self._nodes[key] = None if raw is None else StepNode.decode(raw)
        return self._nodes[key]

    def put(self, node: StepNode) -> None:
        key = node_key(node.owner, node.workflow_id, node.job_id)
        raw = node.encode()
        self._move_waiting(self.get(node.owner, node.workflow_id, node.job_id), node)
        self._nodes[key] = node
        self.tx.put(key, raw)
        self.changelog.append((key, raw))

    def delete(self, node: StepNode) -> None:
        """Forget a node (an ended workflow's, a recurring workflow's ended run)."""
        key = node_key(node.owner, node.workflow_id, node.job_id)
        self._move_waiting(self.get(node.owner, node.workflow_id, node.job_id), None)
        self._nodes[key] = None
        self.tx.delete(key)
        self.changelog.append((key, None))

    def of_workflow(self, owner: str, workflow_id: str) -> Iterator[StepNode]:
        """Every node of the workflow, by job id."""
        prefix = NODE_PREFIX + _workflow(owner, workflow_id)
        for key, _ in self.tx.scan(prefix, prefix + _END):
            node = self.get(owner, workflow_id, key[len(prefix) :].decode())
            if node is not None:
                yield node

    def waiting_on(self, owner: str, workflow_id: str, parent: str) -> list[str]:
        """The children that still wait for ``parent``."""
        prefix = WAITING_PREFIX + _workflow(owner, workflow_id) + parent.encode()
        return [key[len(prefix) :].decode() for key, _ in self.tx.scan(prefix, prefix + _END)]

    def workflow(self, owner: str, workflow_id: str) -> WorkflowRecord | None:
        raw = self.tx.get(workflow_key(owner, workflow_id))
        return None if raw is None else WorkflowRecord.decode(raw)

    def put_workflow(self, record: WorkflowRecord) -> None:
        key, raw = workflow_key(record.owner, record.workflow_id), record.encode()
        self.tx.put(key, raw)
        self.changelog.append((key, raw))

    def delete_workflow(self, owner: str, workflow_id: str) -> None:
        key = workflow_key(owner, workflow_id)
        self.tx.delete(key)
        self.changelog.append((key, None))

    def signal(self, owner: str, workflow_id: str, name: str) -> WorkflowSignalled | None:
        """The signal of that name kept for the workflow, if one is."""
        raw = self.tx.get(signal_key(owner, workflow_id, name))
        return None if raw is None else _SIGNAL.decode(raw)

    def keep_signal(self, signal: WorkflowSignalled) -> None:
        key = signal_key(signal.owner, signal.workflow_id, signal.name)
        raw = msgspec.json.encode(signal)
        self.tx.put(key, raw)
        self.changelog.append((key, raw))

    def drop_signal(self, owner: str, workflow_id: str, name: str) -> None:
        key = signal_key(owner, workflow_id, name)
        self.tx.delete(key)
        self.changelog.append((key, None))

    def kept_signals(self, owner: str, workflow_id: str) -> list[str]:
        """The names of the signals kept for the workflow."""
        prefix = SIGNAL_PREFIX + _workflow(owner, workflow_id)
        return [key[len(prefix) :].decode() for key, _ in self.tx.scan(prefix, prefix + _END)]

    def drop_signals(self, owner: str, workflow_id: str) -> None:
        """Forget every signal kept for an ended workflow."""
        prefix = SIGNAL_PREFIX + _workflow(owner, workflow_id)
        for key, _ in list(self.tx.scan(prefix, prefix + _END)):
            self.tx.delete(key)
            self.changelog.append((key, None))

    def restore(self, key: bytes, value: bytes | None) -> None:
        """Apply one changelog record of a node or a workflow record. A record written
        before workflows were their owner's (no ``owner``) is skipped: its key names the
        workflow by id alone, so nothing would find it (docs/workflows.md, "Upgrading")."""
        if value is not None and "owner" not in orjson.loads(value):
            log.warning("workflow state without an owner skipped", extra={"key": repr(key)})
            return
        if key.startswith(NODE_PREFIX):
            previous_raw = self.tx.get(key)
            previous = None if previous_raw is None else StepNode.decode(previous_raw)
            self._move_waiting(previous, None if value is None else StepNode.decode(value))
        if value is None:
            self.tx.delete(key)
        else:
            self.tx.put(key, value)

    def apply(self, key: bytes, value: bytes | None) -> None:
        """Write (or delete) one record as the changelog carries it, and log it (a
        workflow's record handed over between partitions when jobs.intake grows)."""
        self.restore(key, value)
        self._nodes.pop(key, None)
        self.changelog.append((key, value))

    def _move_waiting(self, previous: StepNode | None, node: StepNode | None) -> None:
        old = set() if previous is None else set(previous.waiting)
        new = set() if node is None else set(node.waiting)
        some = node or previous
        if some is None:
            return
        for parent in old - new:
            self.tx.delete(waiting_key(some.owner, some.workflow_id, parent, some.job_id))
        for parent in new - old:
            self.tx.put(waiting_key(some.owner, some.workflow_id, parent, some.job_id), b"")
