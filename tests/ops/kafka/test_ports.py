"""Ports picked for local brokers and processes lie below the kernel's ephemeral range, so
no outgoing connection can hold them and no probe of them can connect to itself."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from jobstream._ops.kafka.ports import free_base_port, free_ports
from jobstream._ops.stack import _healthy


def _ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_picked_ports_lie_below_the_ephemeral_range() -> None:
    low = _ephemeral_low()
    for _ in range(50):
        base = free_base_port(3)
        assert base + 100 + 2 < low
        assert free_ports(10) + 9 < low


def test_a_probe_answered_by_something_else_than_http_is_not_healthy() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        # Anything but an HTTP status line, as a socket connected to itself reads back.
        def echo() -> None:
            conn, _ = server.accept()
            with conn:
                conn.sendall(conn.recv(1024))

        threading.Thread(target=echo, daemon=True).start()
        assert _healthy(port) is False
