"""The verdict on a store's files: kept, rebuilt at once, or the end asked again."""

from __future__ import annotations

import pytest

from jobstream._pipeline.kafka.identity import TopicIdentity
from jobstream._pipeline.state.validity import Checkpoint, Verdict, judge

HERE = TopicIdentity(cluster_id="Vg1hxhMgT5e1TVqMa4JRog", topic_id="2FjTOYHEQZyyXluu4ZllcQ")
MADE_AGAIN = TopicIdentity(cluster_id=HERE.cluster_id, topic_id="7sXq0YtDQ4aVbrzwC1Fw1A")
ELSEWHERE = TopicIdentity(cluster_id="q1Sa5sE-RkaQ8nXnv0C7Vw", topic_id=HERE.topic_id)


def files(offset: int | None = 19, identity: TopicIdentity | None = HERE, *,
          topic: str | None = "t", layout: int = 1) -> Checkpoint:  # fmt: skip
    return Checkpoint(topic=topic, layout=layout, identity=identity, offset=offset)


def verdict(checkpoint: Checkpoint, *, low: int = 0, high: int = 30,
            identity: TopicIdentity | None = HERE, waited: bool = False) -> Verdict:  # fmt: skip
    return judge(checkpoint, topic="t", layout=1, identity=identity, low=low, high=high,
                 waited=waited)  # fmt: skip


def test_files_of_this_changelog_with_a_checkpoint_within_it_are_kept() -> None:
    assert verdict(files(19)) is Verdict.KEEP
    assert verdict(files(29)) is Verdict.KEEP
    assert verdict(files(-1), low=0) is Verdict.KEEP, "nothing read yet of a changelog from 0"


@pytest.mark.parametrize("theirs", [MADE_AGAIN, ELSEWHERE], ids=["topic made again", "cluster"])
@pytest.mark.parametrize("high", [0, 5, 30], ids=["empty", "end before", "end past"])
def test_files_of_another_changelog_of_the_name_are_rebuilt_at_once(
    theirs: TopicIdentity, high: int
) -> None:
    assert verdict(files(19, theirs), high=high) is Verdict.FOREIGN


@pytest.mark.parametrize("identity", [HERE, None], ids=["same identity", "identity unknown"])
@pytest.mark.parametrize("recorded", [HERE, None], ids=["recorded", "files from before"])
def test_an_end_at_or_before_the_checkpoint_of_this_changelog_is_asked_again(
    identity: TopicIdentity | None, recorded: TopicIdentity | None
) -> None:
    for high in (0, 10, 19):
        checkpoint = files(19, recorded)
        assert verdict(checkpoint, high=high, identity=identity) is Verdict.ASK_AGAIN
        assert verdict(checkpoint, high=high, identity=identity, waited=True) is Verdict.REBUILD


def test_empty_files_and_files_of_another_topic_or_layout_are_rebuilt() -> None:
    assert verdict(files(None)) is Verdict.REBUILD
    assert verdict(files(None, None, topic=None)) is Verdict.REBUILD
    assert verdict(files(topic="another")) is Verdict.REBUILD
    assert verdict(files(layout=2)) is Verdict.REBUILD


def test_a_checkpoint_before_the_changelogs_first_offset_is_rebuilt() -> None:
    assert verdict(files(3), low=10) is Verdict.REBUILD
    assert verdict(files(9), low=10) is Verdict.KEEP


def test_an_identity_survives_its_encoding() -> None:
    assert TopicIdentity.decode(HERE.encode()) == HERE
