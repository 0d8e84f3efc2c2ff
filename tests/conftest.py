"""One Kafka broker per test session, unique topic prefixes and group ids per test.

The broker is ``KAFKA_BOOTSTRAP_SERVERS`` when set, otherwise a container where a Docker
engine answers, otherwise a local KRaft broker started from ops/ in a temporary folder on
free ports: the choice of jobstream._ops.kafka.session, which the ``jobstream_broker``
fixture of a user's tests makes too. With ``CI=true`` a broker that cannot start fails
the run; elsewhere the tests that need it are skipped with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics
from jobstream.pytest_plugin import session_kafka

# No time bound per example: a property test checks what a function does, and on a loaded
# 2-core machine one example of a few ms may take Hypothesis's default 200 ms.
hypothesis_settings.register_profile("jobstream", deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("jobstream")

pytest_plugins = [
    "pytester", "tests.support.tiers", "tests.support.secure", "tests.support.scheduling",
]


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The session's broker, chosen as for a user's tests (jobstream.pytest_plugin)."""
    yield from session_kafka(tmp_path_factory.mktemp("kafka"))


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name no other test uses: for topic prefixes and group ids."""
    test = request.node.name.replace("[", "-").replace("]", "")[:40]
    return f"{test}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def settings(kafka_bootstrap: str, unique_name: str) -> Settings:
    """Settings on the session broker with a topic prefix of this test's own."""
    return Settings(
        bootstrap_servers=kafka_bootstrap,
        topic_prefix=f"{unique_name}.",
        timer_partitions=3,
        exec_partitions=2,
        events_partitions=3,
        status_partitions=3,
        dlq_partitions=1,
    )


@pytest.fixture
def topics(settings: Settings) -> Topics:
    """Every topic of the design, created for this test."""
    names = Topics(settings)
    ensure_topics(settings.kafka_config, names.specs(), replication_factor=1)
    return names
