"""The ACL table (ops/kafka/acls.py): each role gets what its code touches and nothing of
another role's or another job type's; docs/kafka-security.md shows the same table."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._ops.kafka.acls import ROLES, allowed, grants, markdown_table, principal
from jobstream._ops.kafka.principals import bindings, every_role
from jobstream._pipeline.config import Settings
from jobstream._pipeline.runtime.options import processor_group
from jobstream._pipeline.topics import PRIORITIES, Topics
from jobstream._pipeline.worker.lane import transactional_prefix, worker_group

TOPICS = Topics(Settings(topic_prefix="p.", job_types=("data.process", "image.render")))
OPERATIONS = ("READ", "WRITE", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS")
DOC = Path(__file__).resolve().parents[3] / "docs" / "kafka-security.md"


def type_topics(job_type: str) -> list[str]:
    return [*(TOPICS.execution(job_type, tier) for tier in PRIORITIES),
            TOPICS.dead_letter(job_type)]  # fmt: skip


def test_a_worker_gets_nothing_of_another_types_topics_group_or_transactions() -> None:
    mine = grants("worker", TOPICS, "data.process")
    for name in type_topics("image.render") + type_topics("data.processing"):
        assert not any(allowed(mine, "TOPIC", name, op) for op in OPERATIONS), name
    assert not allowed(mine, "GROUP", worker_group("p.", "image.render"), "READ")
    for other in ("image.render", "data.processing", "data.process.pool-gpu"):
        assert not allowed(mine, "TRANSACTIONAL_ID", f"{transactional_prefix('p.', other)}w1",
                           "WRITE")  # fmt: skip


def test_a_worker_reads_its_types_executions_and_writes_its_outcomes() -> None:
    mine = grants("worker", TOPICS, "data.process")
    for tier in PRIORITIES:
        assert allowed(mine, "TOPIC", TOPICS.execution("data.process", tier), "READ")
    assert allowed(mine, "TOPIC", TOPICS.events, "WRITE")
    assert allowed(mine, "TOPIC", TOPICS.workers, "WRITE")
    assert allowed(mine, "GROUP", worker_group("p.", "data.process"), "READ")
    assert allowed(mine, "TRANSACTIONAL_ID",
                   f"{transactional_prefix('p.', 'data.process')}worker-7", "WRITE")  # fmt: skip
    assert not allowed(mine, "TOPIC", TOPICS.status, "WRITE")
    assert allowed(mine, "TOPIC", TOPICS.intake, "WRITE")  # the children handlers spawn
    assert not allowed(mine, "TOPIC", TOPICS.intake, "READ")


def test_the_client_may_only_write_the_intake() -> None:
    mine = grants("client", TOPICS)
    assert allowed(mine, "TOPIC", TOPICS.intake, "WRITE")
    assert not allowed(mine, "TOPIC", TOPICS.intake, "READ")
    for name in (TOPICS.status, TOPICS.events, TOPICS.retry, *type_topics("data.process")):
        assert not any(allowed(mine, "TOPIC", name, op) for op in OPERATIONS), name


def test_the_console_reads_status_and_events_and_writes_nothing() -> None:
    mine = grants("console", TOPICS)
    assert allowed(mine, "TOPIC", TOPICS.status, "READ")
    assert allowed(mine, "TOPIC", TOPICS.events, "READ")
    assert not [g for g in mine if {"WRITE", "CREATE"} & set(g.operations)]
    assert not allowed(mine, "TOPIC", TOPICS.intake, "READ")


def test_the_timers_fire_to_any_type_and_create_its_topics() -> None:
    mine = grants("timers", TOPICS)
    new_type = TOPICS.execution("brand.new", "high")
    assert allowed(mine, "TOPIC", new_type, "WRITE") and allowed(mine, "TOPIC", new_type, "CREATE")
    assert allowed(mine, "TOPIC", TOPICS.intake, "READ") and allowed(mine, "TOPIC", TOPICS.retry,
                                                                     "READ")  # fmt: skip
    group = processor_group("p.", "timers")
    assert allowed(mine, "GROUP", group, "READ")
    assert allowed(mine, "TRANSACTIONAL_ID", f"{group}.0", "WRITE")
    assert not allowed(mine, "TRANSACTIONAL_ID", f"{processor_group('p.', 'status')}.0", "WRITE")
    assert not allowed(mine, "TOPIC", TOPICS.status, "WRITE")


@pytest.mark.parametrize("role", ["timers", "status", "retry"])
def test_a_processor_owns_its_group_and_transactional_ids_only(role: str) -> None:
    group = processor_group("p.", role)
    others = [processor_group("p.", r) for r in ("timers", "status", "retry") if r != role]
    mine = grants(role, TOPICS)
    assert allowed(mine, "GROUP", group, "READ")
    assert allowed(mine, "TRANSACTIONAL_ID", f"{group}.3", "WRITE")
    for other in others:
        assert not allowed(mine, "GROUP", other, "READ")
        assert not allowed(mine, "TRANSACTIONAL_ID", f"{other}.3", "WRITE")


def test_every_role_has_a_principal_and_bindings() -> None:
    roles = every_role(("data.process",))
    assert [r.user for r in roles] == ["jobstream-timers", "jobstream-status", "jobstream-retry",
                                       "jobstream-triggers", "jobstream-api", "jobstream-client",
                                       "jobstream-console",
                                       "jobstream-worker-data.process"]  # fmt: skip
    for role in roles:
        assert bindings(role.user, grants(role.role, TOPICS, role.job_type))
    with pytest.raises(ValueError, match="per job type"):
        principal("worker")
    with pytest.raises(ValueError, match="unknown role"):
        principal("root")
    assert set(ROLES) == {r.role for r in roles}


def test_the_doc_shows_the_table_of_the_code() -> None:
    text = DOC.read_text()
    begin, end = "<!-- acl-table -->\n", "\n<!-- /acl-table -->"
    shown = text[text.index(begin) + len(begin):text.index(end)]
    assert shown == markdown_table(Topics(Settings(topic_prefix=""))), (
        "docs/kafka-security.md's table differs from ops/kafka/acls.py: regenerate it with "
        "python -c 'from jobstream._ops.kafka.acls import markdown_table; ...'"
    )


def test_the_trigger_processor_submits_and_reads_the_triggers_but_no_source_of_its_own() -> None:
    mine = grants("triggers", TOPICS)
    assert allowed(mine, "TOPIC", TOPICS.triggers, "READ")
    assert not allowed(mine, "TOPIC", TOPICS.triggers, "WRITE")
    assert allowed(mine, "TOPIC", TOPICS.intake, "WRITE")
    assert allowed(mine, "TOPIC", TOPICS.triggers_dlq, "WRITE")
    assert allowed(mine, "GROUP", processor_group("p.", "triggers"), "READ")
    assert allowed(mine, "TRANSACTIONAL_ID", f"{processor_group('p.', 'triggers')}.0", "WRITE")
    assert not allowed(mine, "TOPIC", TOPICS.events, "READ")
    assert allowed(grants("api", TOPICS), "TOPIC", TOPICS.triggers, "WRITE")
