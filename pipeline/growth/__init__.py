"""What a stateful processor needs when its inputs grow more partitions: the layout record
each store keeps, a stray record's forwarding, and the steps of ``jobstream topics grow``
(docs/adr/0011-partitions-that-grow.md; docs/adr/0013-events-partitions-that-grow.md).
The timers (pipeline/timers/handover.py) and the status processor
(pipeline/status/handover.py) say, each of its own records, where it belongs."""
