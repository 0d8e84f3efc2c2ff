"""Real demo jobs, one worker module per type: ``data.process`` aggregates a CSV file,
``image.render`` draws a PNG chart, ``report.generate`` returns an HTML report (kept on
jobs.results). ``faults`` makes any of them fail on request, for retries and dead letters.

Run them with ``--app jobstream._ops.demo_jobs.app`` (the :class:`WorkerApp` in :mod:`.app`).
"""
