"""The partition key of every record of a job: its workflow id when set, else its job id.

Every component keys the records of a job it writes (intake commands, executions, lifecycle
events, retries, dead letters) with it, so all records of a workflow meet in one partition
of every co-partitioned topic and a job's history stays in order. It depends on nothing,
so any package can key records without importing another's.
"""

from __future__ import annotations


def partition_key(job_id: str, workflow_id: str | None) -> bytes:
    """The key of every record of a job: its workflow id when set, else its job id."""
    return (workflow_id or job_id).encode()
