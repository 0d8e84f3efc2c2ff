"""The owners' doors at the timers: a record read on an owner's intake topic is passed on
to jobs.intake, or refused (docs/adr/0010-owner-intake-topics.md).

A record that names the topic's owner and passes every rule of the timers' intake
(pipeline/timers/intake.py) is produced to jobs.intake as it was written (a submission
naming the topic's principal as who submitted it, whatever it said), keyed there as a
client keys it (:func:`jobstream._pipeline.tenancy.intake_key_of`), in the transaction
that commits its offset: passed on exactly once, and decided on jobs.intake like any
other record (as a keyed submission read on the wrong partition is forwarded, see
pipeline/timers/collapse.py). Any other record raises ValidationError, and the processor
dead-letters it to jobs.intake.dlq naming the topic's principal.
"""

from __future__ import annotations

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.records import JobSubmitted, evolve
from jobstream._pipeline.runtime.processor import Output, Record
from jobstream._pipeline.serde import Event
from jobstream._pipeline.tenancy import intake_key_of, kafka_actor, owner_principal, refusal
from jobstream._pipeline.timers.intake import checked

PRINCIPAL_HEADER = "jobstream.principal"
"""A dead letter's header naming the principal whose record it was, when the topic it was
read on tells (an owner's intake topic: the owner's principal)."""


class OwnerDoor:
    def __init__(self, intake: str) -> None:
        self.intake = intake
        self.passed_on = 0

    def passed(self, owner: str, event: Event, record: Record, now_ms: int) -> Output:
        """The record ``event`` (decoded from ``record``) passed on to jobs.intake;
        ValidationError when ``owner``'s door refuses it."""
        reason = refusal(owner, event.data)
        if reason is not None:
            raise ValidationError("owner", reason)
        checked(event, now_ms)  # refused here, naming the principal, not on jobs.intake
        self.passed_on += 1
        data = event.data
        value: Event | bytes = record.value() or b""
        if isinstance(data, JobSubmitted):  # who submitted it is the topic's principal
            value = Event.of(evolve(data, submitted_by=kafka_actor(owner_principal(owner))))
        return Output(self.intake, intake_key_of(data), value, urgent=True)
