"""The processor runtime: one lifecycle for every consume-process-produce processor.

A :class:`~jobstream._pipeline.runtime.processor.Processor` says what it reads, what state it keeps
and what each record (and the wall clock) makes it write; it never touches Kafka. The
:class:`~jobstream._pipeline.runtime.task.Task` holds the owned partitions' states and the open
transaction; the :class:`~jobstream._pipeline.runtime.runner.Runner` carries a task over Kafka (one
consumer, one transactional producer, the stores and their changelog, the commit order,
health and stats), and :class:`~jobstream._pipeline.runtime.driver.ProcessorDriver` carries the same
task with no broker, for tests.
"""

from jobstream._pipeline.runtime.options import RunnerOptions
from jobstream._pipeline.runtime.processor import Output, Processor, Record, StateView

__all__ = ["Output", "Processor", "Record", "RunnerOptions", "StateView"]
