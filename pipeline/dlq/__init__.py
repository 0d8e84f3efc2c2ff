"""The dead-letter queue: read ``jobs.dlq.<type>`` with filters, and redrive jobs.

:mod:`pipeline.dlq.reader` reads DeadLettered records to the end offsets;
:mod:`pipeline.dlq.redrive` puts jobs back through jobs.retry at a capped rate;
:mod:`pipeline.dlq.cli` is ``jobstream dlq list|show|redrive``.
"""
