"""The job model, the ground floor of the engine: no Kafka, no I/O.

What a job is and what may be said about it: the lifecycle's vocabulary
(:mod:`~pipeline.model.lifecycle`), the request and its rules (:mod:`~pipeline.model.job`,
:mod:`~pipeline.model.rules`), the commands on a job (:mod:`~pipeline.model.commands`,
:mod:`~pipeline.model.cancel`), the ids (:mod:`~pipeline.model.idempotency`), the
parameters' summary (:mod:`~pipeline.model.params`), the retry policy and its backoff
(:mod:`~pipeline.model.retry`, :mod:`~pipeline.model.backoff`) and the codec of the keys
the stores order by time (:mod:`~pipeline.model.time_keys`).
"""
