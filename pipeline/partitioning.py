"""The partition key of every record of a job, and the partition a key goes to.

Every component keys the records of a job it writes (intake commands, executions, lifecycle
events, retries, dead letters) with the job's workflow id when set, else its job id, so all
records of a workflow meet in one partition of every co-partitioned topic and a job's
history stays in order. A key goes to a partition by Kafka's Java rule (murmur2), which
the librdkafka producers follow (``partitioner=murmur2_random``, pipeline/kafka/clients.py)
and the asyncio client applies itself (pipeline/kafka/aio.py): a job submitted by one client
and its cancel sent by another meet only if both hash alike. It depends on nothing, so any
package can key records without importing another's.
"""

from __future__ import annotations

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def partition_key(job_id: str, workflow_id: str | None) -> bytes:
    """The key of every record of a job: its workflow id when set, else its job id."""
    return (workflow_id or job_id).encode()


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the Java client's key hash), as an unsigned 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * _M) & _MASK
        k = ((k ^ (k >> 24)) * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[length - length % 4 :]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * _M) & _MASK
    h = ((h ^ (h >> 13)) * _M) & _MASK
    return h ^ (h >> 15)


def java_partition(key: bytes, partitions: int) -> int:
    """The partition of a keyed record among ``partitions``: Kafka's Java default
    partitioner, and librdkafka's ``murmur2_random`` for a record with a key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
