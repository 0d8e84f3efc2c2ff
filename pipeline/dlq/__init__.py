"""The dead-letter queue: read ``jobs.dlq.<type>`` with filters, and redrive jobs.

:mod:`jobstream._pipeline.dlq.reader` reads DeadLettered records to the end offsets;
:mod:`jobstream._pipeline.dlq.redrive` puts jobs back through jobs.retry at a capped rate;
:mod:`jobstream._pipeline.dlq.cli` is ``jobstream dlq list|show|redrive``.
"""
