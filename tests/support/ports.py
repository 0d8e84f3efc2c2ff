"""Free loopback ports for brokers started by tests."""

from __future__ import annotations

import random
import socket


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_base_port(nodes: int) -> int:
    """A base port p with p..p+nodes-1 and p+100..p+100+nodes-1 free (the cluster's plan)."""
    for _ in range(200):
        base = random.randrange(20000, 40000)
        ports = [base + i for i in range(nodes)] + [base + 100 + i for i in range(nodes)]
        if all(_free(port) for port in ports):
            return base
    raise RuntimeError("no free block of loopback ports found")
