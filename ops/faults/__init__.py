"""Fault injection for the whole pipeline, in the spirit of Kafka's transactions system
test and Jepsen: ``jobstream faults run --scenario <name|all> --jobs N``.

A run owns a Kafka cluster (one node, or three for the broker scenarios), topics under a
fresh prefix and the pipeline as processes. It submits one-off jobs of a type whose
handler writes down every run it makes, kills or pauses one process (or broker node)
while they fire, and checks from jobs.events and that handler-side record that no job
was lost and no job ran twice without the pipeline saying so. docs/reliability.md has
the scenarios and the numbers measured.

- ``app.py``: the worker app the runs use; ``journal.py``: its record of handler runs.
- ``cluster.py``: the run's own Kafka cluster, and faults on its nodes.
- ``supervisor.py``: the pipeline's processes (ops/stack.py) plus restart and pause.
- ``scenarios.py``: one small function per fault, in one registry.
- ``load.py``: the jobs submitted; ``observer.py``: jobs.events read as it commits.
- ``tally.py``: the numbers, a pure function; ``run.py``: one run; ``cli.py``: the command.
"""
