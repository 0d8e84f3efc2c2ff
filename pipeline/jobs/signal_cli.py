"""``jobstream signal``: a named signal for a workflow, from the shell.

It ends every step of the workflow that waits for that name (docs/workflows.md, "Waits
and sleeps"), or is kept for the first step that will::

    jobstream signal payroll-2026-11 approved --owner acme --payload '{"by": "ana"}'
    jobstream signal payroll-2026-11 approved --owner acme --reject --reason "numbers off"

A payload that is not JSON, or a name the rules refuse, exits 2 naming the field.
"""

from __future__ import annotations

import orjson
import typer

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.cli import ByOption, ReasonOption, requester, send_command
from jobstream._pipeline.model.held import signal_event
from jobstream._pipeline.serde import Event


def signal(
    workflow_id: str = typer.Argument(..., help="The workflow to signal."),
    name: str = typer.Argument(..., help="The signal's name, as a wait step names it."),
    owner: str = typer.Option(..., "--owner", help="The workflow's owner (ids are per owner)."),
    payload: str | None = typer.Option(None, "--payload", help="JSON: the result of the step "
                                       "it ends, which its children read."),
    step: str | None = typer.Option(None, "--step", help="Only this step (by name) may take it; "
                                    "not kept when that step is not waiting."),
    reject: bool = typer.Option(False, "--reject", help="Cancel the step it ends instead "
                                "(an approval refused): its children follow their rule."),
    reason: str | None = ReasonOption,
    by: str | None = ByOption,
) -> None:  # fmt: skip
    """Signal a workflow: end the steps that wait for NAME, or keep it for the first."""

    def build() -> Event:
        value = None
        if payload is not None:
            try:
                value = orjson.loads(payload)
            except orjson.JSONDecodeError as exc:
                raise ValidationError("payload", f"is not JSON: {exc}") from None
        return signal_event(owner, workflow_id, name, value, now_ms=now_ms(), reject=reject,
                            step=step, reason=reason, requested_by=requester(by))  # fmt: skip

    send_command(build)
