"""The status processor: folds jobs.events into one state machine per job.

- :mod:`jobstream._pipeline.status.machine`: the pure state machine (docs/lifecycle.md's table,
  epoch fencing, duplicate executions, recurring jobs).
- :mod:`jobstream._pipeline.status.state`: what is kept per job, in a RocksDB store per partition of
  jobs.events, with a lease index and the changelog ``jobs.status.changelog``.
- :mod:`jobstream._pipeline.status.logic`: events in, jobs.status records and LOST / DUPLICATE
  events out; leases expire here.
- :mod:`jobstream._pipeline.status.processor`: the runtime Processor (consume, fold, produce in
  transactions) and its runner.
- :mod:`jobstream._pipeline.status.query`: jobs.status read back into a dict, for the CLI and demos.
"""
