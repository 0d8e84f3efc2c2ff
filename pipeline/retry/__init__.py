"""Where a retry is decided: backoff, retry policies, and the router on jobs.events.

The policy and the backoff are pure (:mod:`pipeline.model.retry`,
:mod:`pipeline.model.backoff`); :mod:`pipeline.retry.router` turns a failure into the
records that route it, and :mod:`pipeline.retry.processor` (the runtime Processor) carries
them in transactions.
"""
