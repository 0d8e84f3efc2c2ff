"""The job model, the ground floor of the engine: no Kafka, no I/O.

What a job is and what may be said about it: the lifecycle's vocabulary
(:mod:`~jobstream._pipeline.model.lifecycle`), the request and its rules
(:mod:`~jobstream._pipeline.model.job`,
:mod:`~jobstream._pipeline.model.rules`), the commands on a job
(:mod:`~jobstream._pipeline.model.commands`,
:mod:`~jobstream._pipeline.model.cancel`), the ids (:mod:`~jobstream._pipeline.model.idempotency`),
the
parameters' summary (:mod:`~jobstream._pipeline.model.params`), the retry policy and its backoff
(:mod:`~jobstream._pipeline.model.retry`, :mod:`~jobstream._pipeline.model.backoff`) and the codec
of the keys
the stores order by time (:mod:`~jobstream._pipeline.model.time_keys`).
"""
