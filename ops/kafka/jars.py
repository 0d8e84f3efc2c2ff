"""What the local Kafka broker runs on: Java, and the jars that Maven copies from Maven Central.

The jars are cached outside the repository (``~/.cache/jobstream/kafka/<version>-<pom>``,
where ``<pom>`` is a digest of the pom's text: a dependency added to it fetches the jars
again), so a fresh clone pays the download once per machine and a warm start costs only
the JVM. Beside the broker they hold Kafka's own tools (``kafka-tools``: the console
consumer a test reads jobs.status with, as a Java client would).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.package_data import package_path

log = logging.getLogger(__name__)

POM = package_path("jobstream._ops.kafka", "pom.xml")
LOG4J2_CONFIG = package_path("jobstream._ops.kafka", "log4j2.xml")
_COMPLETE_MARKER = ".complete"


def kafka_version() -> str:
    """The Kafka version the pom pins."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise BrokerError(f"{POM} has no <kafka.version> property")
    return match.group(1)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jobstream" / "kafka"


def jars_dir(version: str | None = None) -> Path:
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return cache_root() / f"{version or kafka_version()}-{digest}"


def java_executable() -> str:
    """The java binary, checked to be version 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise BrokerError(
            "Java 17+ is needed to run the Kafka broker and was not found on PATH "
            "(Debian: apt-get install openjdk-17-jre-headless)"
        )
    _check_version(candidate)
    return candidate


@functools.cache
def _check_version(java: str) -> None:
    """Once a process per binary: a cluster's start launches a JVM or two per node."""
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', out)
    if match is None or int(match.group(1)) < 17:
        raise BrokerError(f"Java 17+ is needed; {java} reports: {out.splitlines()[:1]}")


def java_command(main_class: str, *arguments: str, logs: Path, heap_mb: int = 256,
                 jvm_flags: Sequence[str] = ()) -> list[str]:  # fmt: skip
    """The command line that runs ``main_class`` from the cached Kafka jars (fetched
    first if need be), logging into ``logs`` (``server.log``) through the brokers'
    log4j2 file; ``jvm_flags`` come after the heap's, so they may set it again."""
    return [java_executable(), f"-Xmx{heap_mb}m", *jvm_flags, f"-Dkafka.logs.dir={logs}",
            f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", "-cp", classpath(), main_class,
            *arguments]  # fmt: skip


def ensure_jars(version: str | None = None) -> Path:
    """Copy Kafka's runtime closure into the cache with Maven, once; return the folder."""
    target = jars_dir(version)
    if (target / _COMPLETE_MARKER).exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError(
            "Maven is needed to fetch the Kafka jars and was not found on PATH "
            "(Debian: apt-get install maven)"
        )
    version = version or kafka_version()
    log.info("fetching Kafka %s jars with Maven into %s (first run only)", version, target)
    target.mkdir(parents=True, exist_ok=True)
    command = [
        mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
        f"-Dkafka.version={version}", f"-DoutputDirectory={target}", "-DincludeScope=runtime",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
        raise BrokerError(f"Maven could not fetch the Kafka {version} jars:\n{tail}")
    (target / _COMPLETE_MARKER).touch()
    return target


def classpath(version: str | None = None) -> str:
    return str(ensure_jars(version) / "*")
