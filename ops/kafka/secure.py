"""A secured local cluster: TLS with SASL/SCRAM-SHA-512 for clients, an authorizer, and
the users' passwords, kept in ``<home>/security``.

Each node listens for clients on ``SASL_SSL`` (its port), which is also the brokers' own
listener (they log in as ``broker`` with SCRAM), and for the quorum on ``CONTROLLER`` with
SASL/PLAIN on loopback: KRaft keeps SCRAM credentials in the metadata log, which a
controller cannot read before the quorum has formed, so its listener takes a static user.
``broker`` and ``admin`` are super users; every other principal gets only what
ops/kafka/acls.py grants it (``jobstream kafka acls``). The SCRAM credentials of
``broker`` and ``admin`` are written into the metadata when a node is formatted;
the roles' are made through the admin API.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from jobstream._ops.kafka.java_client import PLAIN_LOGIN, SCRAM_LOGIN, java_properties
from jobstream._ops.kafka.tls import TlsFiles, tls_files

SCRAM = "SCRAM-SHA-512"
BROKER_USER = "broker"
ADMIN_USER = "admin"
SUPER_USERS = (BROKER_USER, ADMIN_USER)
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLIENT_LISTENER = "SASL_SSL"


@dataclass(frozen=True)
class Security:
    """The secrets of one secured cluster, in ``folder`` (mode 0700)."""

    folder: Path

    @property
    def users_file(self) -> Path:
        return self.folder / "users.json"

    def tls(self) -> TlsFiles:
        self._ensure_folder()
        return tls_files(self.folder)

    def passwords(self) -> dict[str, str]:
        if not self.users_file.exists():
            return {}
        loaded: dict[str, str] = json.loads(self.users_file.read_text())
        return loaded

    def password(self, user: str) -> str:
        """``user``'s password, made (and kept) the first time it is asked for."""
        known = self.passwords()
        if user not in known:
            known[user] = secrets.token_urlsafe(24)
            self._ensure_folder()
            fd = os.open(self.users_file.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT
                         | os.O_TRUNC, 0o600)  # fmt: skip
            with os.fdopen(fd, "w") as out:
                json.dump(known, out, indent=2)
            os.replace(self.users_file.with_suffix(".tmp"), self.users_file)
        return known[user]

    def _ensure_folder(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o700)

    # -- the broker's side ---------------------------------------------------------------

    def server_properties(self, port: int, controller_port: int) -> dict[str, object]:
        """What a secured node's server.properties has instead of (and beside) the
        PLAINTEXT listeners of an open one."""
        tls = self.tls()
        broker = self.password(BROKER_USER)
        return {
            "listeners": f"{CLIENT_LISTENER}://127.0.0.1:{port},"
                         f"CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"{CLIENT_LISTENER}://127.0.0.1:{port}",
            "listener.security.protocol.map": f"{CLIENT_LISTENER}:SASL_SSL,"
                                              "CONTROLLER:SASL_PLAINTEXT",
            "inter.broker.listener.name": CLIENT_LISTENER,
            "sasl.mechanism.inter.broker.protocol": SCRAM,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": SCRAM,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
                f'{SCRAM_LOGIN} required username="{BROKER_USER}" password="{broker}";',
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config":
                f'{PLAIN_LOGIN} required username="{BROKER_USER}" password="{broker}" '
                f'user_{BROKER_USER}="{broker}";',
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": tls.server,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": tls.ca,
            "authorizer.class.name": AUTHORIZER,
            "super.users": ";".join(f"User:{user}" for user in SUPER_USERS),
            "allow.everyone.if.no.acl.found": "false",
        }  # fmt: skip

    def format_arguments(self) -> list[str]:
        """StorageTool arguments that write the super users' SCRAM credentials into the
        metadata being formatted."""
        arguments = []
        for user in SUPER_USERS:
            arguments += ["--add-scram",
                          f"{SCRAM}=[name={user},password={self.password(user)}]"]  # fmt: skip
        return arguments

    # -- the clients' side ---------------------------------------------------------------

    def settings_env(self, user: str) -> dict[str, str]:
        """The JOBSTREAM_* settings of a process that logs in as ``user``: its client
        config, each key as the setting that maps to it (``sasl.username``:
        ``JOBSTREAM_SASL_USERNAME``, pipeline/config.py)."""
        return {"JOBSTREAM_" + key.replace(".", "_").upper(): value
                for key, value in self.client_config(user).items()}  # fmt: skip

    def java_properties(self, user: str) -> str:
        """A Java client's properties file (Kafka's console tools: ``--consumer.config``)
        that logs in as ``user`` and trusts the local CA."""
        return java_properties(self.client_config(user))

    def client_config(self, user: str) -> dict[str, str]:
        """librdkafka settings of a client that logs in as ``user``."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": SCRAM,
            "sasl.username": user,
            "sasl.password": self.password(user),
            "ssl.ca.location": str(self.tls().ca),
        }
