"""The status processor: folds jobs.events into one state machine per job.

- :mod:`pipeline.status.machine`: the pure state machine (docs/lifecycle.md's table,
  epoch fencing, duplicate executions, recurring jobs).
- :mod:`pipeline.status.state`: what is kept per job, in a RocksDB store per partition of
  jobs.events, with a lease index and the changelog ``jobs.status.changelog``.
- :mod:`pipeline.status.logic`: events in, jobs.status records and LOST / DUPLICATE
  events out; leases expire here.
- :mod:`pipeline.status.processor`: the runtime Processor (consume, fold, produce in
  transactions) and its runner.
- :mod:`pipeline.status.query`: jobs.status read back into a dict, for the CLI and demos.
"""
