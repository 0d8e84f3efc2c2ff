"""Whether a store's files may be kept: what they record against what the changelog shows.

Files are kept when they follow this changelog in this layout and their checkpoint lies
within it; the restore then reads on after the checkpoint. Two cases look alike from the
offsets alone and must not be confused:

- a changelog of another cluster, or an earlier topic of the same name (a broker whose
  data was wiped, a changelog deleted and made again): its offsets mean nothing to these
  files, whatever they are, and the files are rebuilt at once;
- the same changelog read from a leader that has not learnt yet that it lost its place
  (a broker back from a pause), or with a transaction still open holding its last stable
  offset back: its end may show at or before the checkpoint for a moment. A store records
  only offsets Kafka committed, so such an end was read too early; taken at its word it
  would wipe valid files and restore less than was committed. It is asked again, and
  only an end that stays behind rebuilds the files.

The identities (cluster id and topic id, pipeline/kafka/identity.py) tell the two apart.
Files written before identities were recorded, or a cluster that did not tell its ids,
leave only the offsets: the end is asked again, as for a lagging leader.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from jobstream._pipeline.kafka.identity import TopicIdentity
from jobstream._pipeline.state.store import PartitionStore


class Verdict(Enum):
    KEEP = "keep"
    """The files follow this changelog: read on after their checkpoint."""
    ASK_AGAIN = "ask again"
    """The end lies at or before the checkpoint of files that otherwise follow this
    changelog: an end read too early, or a changelog that lost what it had."""
    FOREIGN = "foreign"
    """The files follow another cluster's changelog, or an earlier topic of its name."""
    REBUILD = "rebuild"
    """The files are empty, of another changelog or layout, or their checkpoint lies
    outside the changelog (after waiting, or before its first offset)."""


@dataclass(frozen=True)
class Checkpoint:
    """What a store's files record of the changelog they follow."""

    topic: str | None
    layout: int
    identity: TopicIdentity | None
    offset: int | None
    """The offset of the last changelog record the files reflect."""

    @classmethod
    def of(cls, store: PartitionStore) -> Checkpoint:
        return cls(topic=store.changelog_topic, layout=store.layout,
                   identity=store.changelog_identity, offset=store.changelog_offset)  # fmt: skip


def judge(files: Checkpoint, *, topic: str, layout: int, identity: TopicIdentity | None,
          low: int, high: int, waited: bool) -> Verdict:  # fmt: skip
    """The verdict on ``files`` for changelog ``topic`` (``identity``, None when unknown)
    holding offsets ``low`` up to ``high`` (excluded), and the processor's ``layout``;
    ``waited``: the end has been asked again for as long as an end may lag."""
    if files.topic != topic or files.layout != layout or files.offset is None:
        return Verdict.REBUILD
    if None not in (identity, files.identity) and identity != files.identity:
        return Verdict.FOREIGN
    if files.offset >= high:
        return Verdict.REBUILD if waited else Verdict.ASK_AGAIN
    if files.offset < low - 1:
        return Verdict.REBUILD
    return Verdict.KEEP
