"""Where a retry is decided: backoff, retry policies, and the router on jobs.events.

The policy and the backoff are pure (:mod:`jobstream._pipeline.model.retry`,
:mod:`jobstream._pipeline.model.backoff`); :mod:`jobstream._pipeline.retry.router` turns a failure
into the
records that route it, and :mod:`jobstream._pipeline.retry.processor` (the runtime Processor)
carries
them in transactions.
"""
