"""The edges of jobstream: what connects the engine to the outside world.

The HTTP API, the dashboard, views of the status topic and sinks that copy jobs or
their outcomes to other systems belong here. A connector may import ``pipeline`` (the
engine) but never ``ops``; ``tests/test_layers.py`` holds both rules.
"""
