"""The status processor: folds jobs.events into one state machine per job.

- :mod:`jobstream._pipeline.status.machine`: the pure state machine (docs/lifecycle.md's table,
  epoch fencing, duplicate executions, recurring jobs).
- :mod:`jobstream._pipeline.status.state`: what is kept per job, in a RocksDB store per partition of
  jobs.events, with a lease index; jobs.status is its changelog.
- :mod:`jobstream._pipeline.status.record`: a jobs.status record: the public status and the
  headers only the processor reads; which records a reader of the statuses skips.
- :mod:`jobstream._pipeline.status.logic`: events in, LOST / DUPLICATE events out (the
  statuses are the store's changes); leases expire here.
- :mod:`jobstream._pipeline.status.processor`: the runtime Processor (consume, fold, produce in
  transactions) and its runner.
- :mod:`jobstream._pipeline.status.query`: jobs.status read back into a dict, for the CLI and demos.
"""
