"""docker-compose.yml's jobstream services as local processes.

Each service keeps its command and its environment; what only a container has is
replaced: the broker's name by the test's broker, fixed ports by free ones, an interface
of all addresses by the loopback one, volume paths by folders of the test's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Component, Stack
from tests.support.wheel import ROOT, Installed

COMPOSE_FILE = ROOT / "docker-compose.yml"
IMAGE = "jobstream:dev"
"""The image of the services that run a ``jobstream`` command."""

METRICS_PORT = "--metrics-port"
PORT_OPTIONS = (METRICS_PORT, "--port")
LOOPBACK = "127.0.0.1"


def compose_services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    return services


def jobstream_services() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in compose_services().items() if s.get("image") == IMAGE}


def option_value(command: list[str], option: str) -> str | None:
    """The value after ``option`` in a command line, if it has the option."""
    return command[command.index(option) + 1] if option in command else None


@dataclass(frozen=True)
class LocalService:
    """One compose service, as a command line and environment of this machine."""

    name: str
    args: tuple[str, ...]
    """The command's arguments, without ``--metrics-port`` (see :attr:`metrics_port`)."""
    env: tuple[tuple[str, str], ...]
    ports: tuple[tuple[str, int], ...]
    """Each port option of the command, with the free port it was given."""
    one_shot: bool
    """Runs once and exits (``restart: "no"``), as ``topics`` does."""

    def port(self, option: str) -> int:
        return dict(self.ports)[option]

    def component(self) -> Component:
        """The long-running service as the stack runs it: the stack adds the metrics port."""
        return Component(self.name, self.args, self.port(METRICS_PORT), self.env)


def _environment(service: dict[str, Any], given: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The service's variables; ``given`` replaces some, and must supply those that compose
    takes from the host's shell (declared without a value)."""
    declared: dict[str, str | None] = service.get("environment") or {}
    missing = [k for k, v in declared.items() if v is None and k not in given]
    assert not missing, f"the test gives no value for the host's {missing}"
    return tuple((k, given.get(k, str(v))) for k, v in declared.items())


def _volume_dirs(name: str, service: dict[str, Any], work: Path) -> dict[str, str]:
    """Each named volume's container path -> a folder under ``work``."""
    dirs = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        dirs[target] = str(work / name / source)
    return dirs


def localize(services: dict[str, dict[str, Any]], work: Path,
             env: Mapping[str, str]) -> list[LocalService]:  # fmt: skip
    """``services`` as this machine runs them, each with ports of its own and its volumes
    under ``work``; ``env`` gives values to environment variables (see ``_environment``)."""
    wanted = sum(option in s["command"] for s in services.values() for option in PORT_OPTIONS)
    next_port = iter(range(free_ports(wanted), 65536))
    local = []
    for name, service in services.items():
        volumes = _volume_dirs(name, service, work)
        args, ports, command = [], [], list(service["command"])
        for previous, value in zip([None, *command], command, strict=False):
            if previous in PORT_OPTIONS:
                ports.append((previous, next(next_port)))
                args.append(str(ports[-1][1]))
            elif previous == "--host":
                args.append(LOOPBACK)
            else:
                args.append(volumes.get(value, value))
        if METRICS_PORT in args:
            at = args.index(METRICS_PORT)
            del args[at : at + 2]
        local.append(LocalService(name, tuple(args), _environment(service, env), tuple(ports),
                                  one_shot=service.get("restart") == "no"))  # fmt: skip
    return local


@dataclass(frozen=True)
class ComposeRun:
    """The compose file's jobstream services running from an installed wheel."""

    installed: Installed
    bootstrap: str
    api_token: str
    """A bearer token the API was configured with (an admin's)."""
    services: tuple[LocalService, ...]
    exits: dict[str, int]
    """Exit code of each one-shot service."""
    stack: Stack
    """The long-running services, healthy when the run is handed over."""

    def service(self, name: str) -> LocalService:
        return next(s for s in self.services if s.name == name)
