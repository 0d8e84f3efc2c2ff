"""Rebuilding state from the topics, from offset zero: jobs.status and the timers' stores.

(The API's views rebuild themselves: ``ViewUpdater.rebuild`` in connectors/views/.)
"""
