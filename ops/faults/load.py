"""The jobs of a fault run: N one-off jobs due evenly over a window, each submitted a
lead ahead of its due time, so submissions go on through the fault.

Every job has an idempotency key, so a batch the broker did not acknowledge (a broker
node down) is submitted again without making a second job: the id is the same.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from jobstream._ops.faults.app import FAIL_UNTIL_ATTEMPT, JOB_TYPE, WORK_MS
from jobstream._pipeline.clock import instant_of, now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import JobClient, SubmissionError
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.job import JobRequest

log = logging.getLogger(__name__)

OWNER = "faults"
_PACE_S = 0.05
_RETRY_S = 1.0


@dataclass(frozen=True)
class Load:
    jobs: int
    window_ms: int
    """The last job falls due this long after the first."""
    lead_ms: int
    """Each job is submitted this long before it falls due."""
    fail_share: float = 0.0
    """Share of jobs whose first attempt fails on purpose (a retry then succeeds)."""
    long_share: float = 0.0
    """Share of jobs that work ``long_work_ms`` (ops/faults/app.py, ``work_ms``)."""
    long_work_ms: int = 0

    def due_ms(self, t0_ms: int, i: int) -> int:
        return t0_ms + (i * self.window_ms) // max(self.jobs - 1, 1)

    def fails_first(self, i: int) -> bool:
        return _one_in(i, self.fail_share)

    def works_long(self, i: int) -> bool:
        return _one_in(i, self.long_share)


def _one_in(i: int, share: float) -> bool:
    """Whether job ``i`` is one of a ``share`` of the jobs, spread evenly."""
    return int((i + 1) * share) > int(i * share)


class Submitter(threading.Thread):
    """Submits ``load``'s jobs (job i due at ``load.due_ms(t0_ms, i)``) from a thread."""

    def __init__(self, settings: Settings, load: Load, t0_ms: int, key_prefix: str, *,
                 first: int = 0) -> None:  # fmt: skip
        """``first``: the index of the first job it submits (a client that fails over to a
        standby submits again from the first job the lost cluster may not have copied)."""
        super().__init__(name="faults-submitter", daemon=True)
        self.settings, self.load, self.t0_ms, self.key_prefix = settings, load, t0_ms, key_prefix
        self.next_index = first
        """The index of the next job to submit: every job before it was acknowledged."""
        self.due: dict[str, int] = {}
        """Job id -> due time (epoch ms) of every job the broker acknowledged."""
        self.retries = 0
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            with JobClient(self.settings) as client:
                done = self.next_index
                while done < self.load.jobs and not self.halt.is_set():
                    horizon = now_ms() + self.load.lead_ms
                    upto = done
                    while upto < self.load.jobs and self.load.due_ms(self.t0_ms, upto) <= horizon:
                        upto += 1
                    if upto == done:
                        time.sleep(_PACE_S)
                        continue
                    if not self._submit(client, range(done, upto)):
                        return
                    done = self.next_index = upto
        except BaseException as exc:  # the run reports it and stops
            self.error = exc

    def _submit(self, client: JobClient, indices: range) -> bool:
        """Submit the jobs of ``indices`` until acknowledged; False when halted first."""
        requests = {i: self._request(i) for i in indices}
        while requests and not self.halt.is_set():
            try:
                ids = client.submit_many(requests.values())
            except SubmissionError as exc:
                if not exc.retryable:
                    raise
                self.retries += 1
                log.warning("submission not acknowledged, submitting again: %s", exc)
                failed = set(exc.job_ids)
                if failed:  # the others are in: record them, send only the failed again
                    for i in list(requests):
                        job_id = idempotent_job_id(OWNER, self._key(i))
                        if job_id not in failed:
                            self.due[job_id] = self.load.due_ms(self.t0_ms, i)
                            del requests[i]
                time.sleep(_RETRY_S)
                continue
            for i, job_id in zip(requests, ids, strict=True):
                self.due[job_id] = self.load.due_ms(self.t0_ms, i)
            return True
        return not requests

    def _request(self, i: int) -> JobRequest:
        due = instant_of(self.load.due_ms(self.t0_ms, i))
        params: dict[str, int] = {FAIL_UNTIL_ATTEMPT: 2} if self.load.fails_first(i) else {}
        if self.load.works_long(i):
            params[WORK_MS] = self.load.long_work_ms
        return JobRequest(job_type=JOB_TYPE, owner=OWNER, run_at=due, params=params,
                          idempotency_key=self._key(i))  # fmt: skip

    def _key(self, i: int) -> str:
        return f"{self.key_prefix}{i}"
