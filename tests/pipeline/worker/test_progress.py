"""Progress from a handler, no broker: the arguments checked, reports coalesced and rate
limited by :class:`ProgressReporter` on a clock the test controls, and every place a
handler runs (a thread, the event loop, a child process) handing its reports over."""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import orjson
import pytest

from jobstream._pipeline.errors import InvalidArgumentError, ValidationError
from jobstream._pipeline.model.lifecycle import PROGRESS_MESSAGE_CHARS
from jobstream._pipeline.worker.app import load_app
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.executor import Finished, JobExecutor
from jobstream._pipeline.worker.processes import ProcessExecutor
from jobstream._pipeline.worker.progress import ProgressReport, ProgressReporter, Reports, checked
from tests.pipeline.worker.executions import execution_requested

APP = "tests.pipeline.worker.progress_app"
app = load_app(APP)


def report(fraction: float, at_ms: int = 0) -> ProgressReport:
    return ProgressReport(fraction, f"at {fraction}", at_ms)


# -- the arguments --------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0, 0.0, 0.5, 1, 1.0])
def test_a_fraction_from_0_to_1_is_taken_as_a_float(fraction: float) -> None:
    value, message = checked(fraction, "resizing")
    assert (value, type(value), message) == (float(fraction), float, "resizing")


@pytest.mark.parametrize("fraction", [-0.01, 1.0001, 2, math.nan, math.inf, -math.inf,
                                      True, "0.5", None, [0.5]])  # fmt: skip
def test_a_bad_fraction_is_a_value_error_naming_it(fraction: object) -> None:
    with pytest.raises(ValueError, match=r"^fraction: expected a number from 0 to 1") as caught:
        checked(fraction, None)
    assert isinstance(caught.value, InvalidArgumentError)
    assert isinstance(caught.value, ValidationError) and caught.value.retryable is False
    assert caught.value.field == "fraction"


@pytest.mark.parametrize("message", [b"bytes", 42, {"step": 1}])
def test_a_message_that_is_not_a_string_is_a_value_error_naming_it(message: object) -> None:
    with pytest.raises(ValueError, match=r"^message: expected a string or None") as caught:
        checked(0.5, message)
    assert isinstance(caught.value, InvalidArgumentError) and caught.value.field == "message"


def test_a_long_message_is_cut_to_its_bound_and_says_so() -> None:
    assert checked(0.5, None) == (0.5, None)
    exact = "x" * PROGRESS_MESSAGE_CHARS
    assert checked(0.5, exact) == (0.5, exact)
    _, cut = checked(0.5, "y" * 10_000)
    assert cut is not None and len(cut) == PROGRESS_MESSAGE_CHARS == 200
    assert cut == "y" * 199 + "…"


def test_a_handler_reports_through_its_context_and_is_refused_there() -> None:
    sent: list[ProgressReport] = []
    record = execution_requested().data
    ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=1, progress_sink=sent.append)
    ctx.progress(0.25, "quarter")
    ctx.progress(1)
    with pytest.raises(ValueError, match="fraction"):
        ctx.progress(1.5, "too far")
    with pytest.raises(ValueError, match="message"):
        ctx.progress(0.5, 7)  # type: ignore[arg-type]
    assert [(r.fraction, r.message) for r in sent] == [(0.25, "quarter"), (1.0, None)]
    assert all(r.at_ms > 1_700_000_000_000 for r in sent), "the instant of the call, wall clock"


def test_a_context_built_by_hand_drops_its_reports() -> None:
    ctx = build_context(execution_requested().data, worker_id="w", started_ms=0, timeout_s=1)
    ctx.progress(0.5, "nobody listens")  # no worker: nothing to send it to, and no error


# -- coalescing and the rate ------------------------------------------------------------------


def test_the_first_report_leaves_at_once_and_later_ones_wait_for_the_interval() -> None:
    reporter = ProgressReporter(interval_s=0.25)
    assert reporter.due(10.0) is None, "nothing reported"
    reporter.put(report(0.1))
    assert reporter.due(10.0) == (report(0.1), None)
    assert reporter.due(10.0) is None, "taken: nothing waits"
    reporter.put(report(0.2))
    reporter.put(report(0.3))
    assert reporter.due(10.2) is None, "within the interval of the previous report"
    assert reporter.due(10.25) == (report(0.3), None), "the latest; the one replaced never leaves"
    reporter.put(report(0.4))
    assert reporter.due(10.4) is None
    assert reporter.due(10.6) == (report(0.4), None)


def test_the_report_waiting_when_the_run_ends_is_taken_whatever_the_interval() -> None:
    reporter = ProgressReporter(interval_s=0.25)
    assert reporter.last(0.0) is None
    reporter.put(report(0.5))
    assert reporter.due(0.0) == (report(0.5), None)
    reporter.put(report(1.0))
    assert reporter.due(0.01) is None
    assert reporter.last(0.01) == (report(1.0), None)
    assert reporter.last(0.02) is None, "sent once"


def test_a_flood_of_reports_leaves_at_most_one_per_interval_and_ends_with_the_last() -> None:
    """A handler reporting every millisecond for 3 s, the worker's loop turning every 20 ms."""
    reporter = ProgressReporter(interval_s=0.25)
    sent: list[tuple[float, Reports]] = []
    for ms in range(3000):
        reporter.put(report(ms / 3000, at_ms=ms))
        now = ms / 1000
        if ms % 20 == 0 and (due := reporter.due(now)) is not None:
            sent.append((now, due))
    final = reporter.last(3.0)
    assert final is not None and final.progress is not None
    assert final.progress.at_ms == 2999, "the handler's last word goes out"
    assert 3 / 0.25 <= len(sent) <= 3 / 0.25 + 1
    gaps = [later - earlier for (earlier, _), (later, _) in pairwise(sent)]
    assert min(gaps) >= 0.25 - 1e-9
    assert all(due.progress and due.progress.at_ms == round(now * 1000)
               for now, due in sent)  # fmt: skip, "each the latest then"


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        ProgressReporter(interval_s=-1)


def test_a_report_put_while_one_is_taken_is_never_lost() -> None:
    """The handler's thread puts 0..N-1 while the loop takes: the last one always arrives."""
    reporter, count = ProgressReporter(interval_s=0), 20_000
    taken: list[int] = []

    def handler() -> None:
        for i in range(count):
            reporter.put(ProgressReport(0.5, None, i))

    thread = threading.Thread(target=handler)
    thread.start()
    while thread.is_alive():
        if (due := reporter.due(0.0)) is not None and due.progress is not None:
            taken.append(due.progress.at_ms)
    thread.join()
    if (final := reporter.last(0.0)) is not None and final.progress is not None:
        taken.append(final.progress.at_ms)
    assert taken[-1] == count - 1
    assert taken == sorted(set(taken)), "in order, none twice"


# -- where handlers run ------------------------------------------------------------------------


class Sink:
    """A run's progress sink that notes how many reports it had when the run ended."""

    def __init__(self) -> None:
        self.reports: list[ProgressReport] = []
        self.at_end: dict[int, int] = {}
        self.ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()

    def finished(self, end: Finished) -> None:
        self.at_end[end.token] = len(self.reports)
        self.ends.put(end)


def context(sink: Sink, job_type: str, **params: Any) -> Any:
    record = execution_requested(job_type=job_type, params=params).data
    return build_context(record, worker_id="w", started_ms=0, timeout_s=30,
                         progress_sink=sink.reports.append)  # fmt: skip


def answer(end: Finished) -> Any:
    assert end.result is not None and end.result.inline is not None, end
    return orjson.loads(end.result.inline)


@pytest.fixture
def threads() -> Iterator[tuple[JobExecutor, Sink]]:
    sink = Sink()
    executor = JobExecutor(2, sink.finished)
    yield executor, sink
    executor.close()


@pytest.mark.parametrize("job_type", ["progress.steps", "progress.async"])
def test_a_handler_on_a_thread_or_the_event_loop_reports_before_it_ends(
    threads: tuple[JobExecutor, Sink], job_type: str
) -> None:
    executor, sink = threads
    executor.submit(1, app.get(job_type), context(sink, job_type, steps=4))
    end = sink.ends.get(timeout=30)
    assert answer(end) == 4
    assert [(r.fraction, r.message) for r in sink.reports] == [
        (0.25, "step 1 of 4"), (0.5, "step 2 of 4"), (0.75, "step 3 of 4"), (1.0, "step 4 of 4")]
    assert sink.at_end[1] == 4


def test_a_bad_report_raises_in_the_handler(threads: tuple[JobExecutor, Sink]) -> None:
    executor, sink = threads
    executor.submit(1, app.get("progress.bad"), context(sink, "progress.bad", fraction=-1))
    assert answer(sink.ends.get(timeout=30)) == (
        "refused: fraction: expected a number from 0 to 1, got -1.0")
    assert sink.reports == []


@pytest.fixture
def children(child_processes: None) -> Iterator[tuple[ProcessExecutor, Sink]]:
    sink = Sink()
    executor = ProcessExecutor(APP, 1, sink.finished)
    yield executor, sink
    executor.close()


@pytest.mark.parametrize("job_type", ["progress.steps", "progress.async"])
def test_a_handler_in_a_child_process_reports_across_the_pipe_before_it_ends(
    children: tuple[ProcessExecutor, Sink], job_type: str
) -> None:
    executor, sink = children
    executor.submit(1, app.get(job_type), context(sink, job_type, steps=50))
    assert answer(sink.ends.get(timeout=60)) == 50
    assert [r.fraction for r in sink.reports] == [step / 50 for step in range(1, 51)]
    assert sink.reports[-1].message == "step 50 of 50"
    assert sink.at_end[1] == 50, "every report crossed before the run's end"


def test_a_child_refuses_a_bad_report_in_the_handler(
    children: tuple[ProcessExecutor, Sink]
) -> None:
    executor, sink = children
    executor.submit(1, app.get("progress.bad"),
                    context(sink, "progress.bad", fraction=0.5, message=["no"]))  # fmt: skip
    assert answer(sink.ends.get(timeout=60)) == (
        "refused: message: expected a string or None, got list")
    assert sink.reports == []
