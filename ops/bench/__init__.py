"""Benchmarks that run jobstream's processes against a real broker and report numbers.

``e2e``: ``jobstream bench``, the whole pipeline end to end (``pipeline_run``, ``events``,
``tally``, ``targets``), beside Celery on Redis (``peer``); ``timers``: ``jobstream
bench-timers``, the timer processor alone; ``measure``: what they read from /proc and
how they summarise it; ``harness``: the broker, topics and processes a run owns;
``isolation``: a no-op job's cost in the worker's thread and process executors.
"""
