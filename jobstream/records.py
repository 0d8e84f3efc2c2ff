"""The records on jobstream's topics, typed, for a Kafka client of one's own.

Every Avro record of ``schemas/`` has a frozen type here, field for field, and an
[`Event`][jobstream.records.Event] pairs a record with its name.
[`make_serde`][jobstream.records.make_serde] gives the serializer and
deserializer the processes use: ``deserialize(value)`` turns a record's bytes (single-object
Avro, or the Confluent wire format with a schema registry) into an
[`Event`][jobstream.records.Event].
jobs.status holds JSON rather than Avro:
[`decode_status`][jobstream.records.decode_status] reads one of its values into a
[`JobStatus`][jobstream.records.JobStatus].

```python
from confluent_kafka import Consumer
from jobstream.records import JobLifecycle, make_serde

_, deserialize = make_serde()
consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "audit"})
consumer.subscribe(["jobs.lifecycle"])
message = consumer.poll(10)
event = deserialize(message.value())
if isinstance(event.data, JobLifecycle):
    print(event.data.job_id, event.data.kind)
```
"""

from jobstream._pipeline.model.lifecycle import JobState, LifecycleKind
from jobstream._pipeline.model.records import (
    RECORD_TYPES,
    CancelRequested,
    CronSchedule,
    DeadLettered,
    ErrorInfo,
    Event,
    ExecutionRequested,
    JobCancelled,
    JobLifecycle,
    JobSpec,
    JobSubmitted,
    JobTriggered,
    ParentFailurePolicy,
    ParentResultRecord,
    Priority,
    Progress,
    Record,
    RetryPolicyRecord,
    RetryScheduled,
    ScheduleAction,
    ScheduleChanged,
    StepEnded,
    StepOutcome,
    WorkerHeartbeat,
    WorkerState,
    WorkflowCancelled,
    WorkflowStep,
    WorkflowSubmitted,
)
from jobstream._pipeline.serde.avro import AvroDeserializer, AvroSerializer, make_serde
from jobstream._pipeline.serde.status_json import JobStatus, LastError, decode_status

__all__ = [
    "RECORD_TYPES",
    "AvroDeserializer",
    "AvroSerializer",
    "CancelRequested",
    "CronSchedule",
    "DeadLettered",
    "ErrorInfo",
    "Event",
    "ExecutionRequested",
    "JobCancelled",
    "JobLifecycle",
    "JobSpec",
    "JobState",
    "JobStatus",
    "JobSubmitted",
    "JobTriggered",
    "LastError",
    "LifecycleKind",
    "ParentFailurePolicy",
    "ParentResultRecord",
    "Priority",
    "Progress",
    "Record",
    "RetryPolicyRecord",
    "RetryScheduled",
    "ScheduleAction",
    "ScheduleChanged",
    "StepEnded",
    "StepOutcome",
    "WorkerHeartbeat",
    "WorkerState",
    "WorkflowCancelled",
    "WorkflowStep",
    "WorkflowSubmitted",
    "decode_status",
    "make_serde",
]
