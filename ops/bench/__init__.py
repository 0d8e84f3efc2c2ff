"""Benchmarks that run jobstream's processes against a real broker and report numbers.

``timers``: the timer processor alone (intake, firing rate, lateness, memory, restore);
``measure``: what the benchmarks read from /proc and how they summarise it; ``harness``:
the broker, topics and processes a benchmark run owns.
"""
