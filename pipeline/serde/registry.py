"""Confluent's schema registry client, loaded when a process first uses a registry.

The client's package brings an HTTP stack with it (httpx, authlib, joserfc): about 130 ms
of every process's start on this project's machines, while most processes have no
registry (single-object encoding needs none). The serde and the triggers' Avro reader
reach the client through here, and only once a registry URL is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.error import SchemaRegistryError


def registry_client(config: dict[str, Any]) -> SchemaRegistryClient:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient(config)


def avro_schema(schema_str: str) -> Schema:
    """An Avro schema to register."""
    from confluent_kafka.schema_registry import Schema

    return Schema(schema_str, schema_type="AVRO")


def registry_error() -> type[SchemaRegistryError]:
    """The registry's error class, for an ``except`` clause: it is looked up only when an
    exception reaches the clause, by which time a client has loaded the package."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    return SchemaRegistryError
