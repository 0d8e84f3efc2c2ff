"""Free loopback ports for the brokers and processes that tests, benchmarks and fault runs
start of their own.

They are picked below Linux's ephemeral range (32768-60999 by default), from which the
kernel takes the source port of every outgoing connection: a port in it can be taken by
a client's connection just before its server binds it, and a probe of a port in it that
nothing listens on yet can connect to itself (source port equal to the destination) and
read its own request back as the answer."""

from __future__ import annotations

import random
import socket

from jobstream._pipeline.errors import BrokerError


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_base_port(nodes: int) -> int:
    """A base port p with p..p+nodes-1 and p+100..p+100+nodes-1 free: a cluster's plan
    (brokers on p.., controllers on p+100..)."""
    for _ in range(200):
        base = random.randrange(20000, 32500)
        if all(port_free(base + i) and port_free(base + 100 + i) for i in range(nodes)):
            return base
    raise BrokerError("no free block of loopback ports found for the cluster")


def free_ports(count: int) -> int:
    """A base port p with p..p+count-1 free (for the processes' /healthz)."""
    for _ in range(200):
        base = random.randrange(10000, 19900)
        if all(port_free(base + i) for i in range(count)):
            return base
    raise BrokerError("no free block of loopback ports found")
