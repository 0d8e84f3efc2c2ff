"""What the benchmarks read from /proc: a JVM's compiler threads apart from its work."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from jobstream._ops.bench.measure import jit_seconds, thread_cpu_seconds

SPIN = """
public class Spin {
    public static void main(String[] args) {
        long end = System.nanoTime() + 4_000_000_000L, sum = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) { sum += (i * 31) ^ (sum >>> 3); }
        }
        System.out.println(sum);
    }
}
"""


def test_jit_counts_the_compiler_threads_only_and_what_they_spent_between() -> None:
    before = {1: ("C2 CompilerThre", 2.0), 2: ("data-plane-kafk", 5.0),
              3: ("C1 CompilerThre", 1.0)}  # fmt: skip
    after = {1: ("C2 CompilerThre", 2.5), 2: ("data-plane-kafk", 9.0),
             4: ("C2 CompilerThre", 0.25)}  # fmt: skip
    assert jit_seconds(before, after) == 0.75  # thread 3 ended: what it spent is gone
    assert jit_seconds(after, after) == 0.0


@pytest.mark.usefixtures("child_processes")
def test_a_jvm_that_runs_hot_code_spends_cpu_in_its_compiler_threads(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not installed (the broker needs it too)")
    source = tmp_path / "Spin.java"
    source.write_text(SPIN)
    process = subprocess.Popen([java, "-XX:-UseDynamicNumberOfCompilerThreads", str(source)],
                               stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        before = thread_cpu_seconds(process.pid)  # at its start: its compiler threads to be
        time.sleep(3)
        after = thread_cpu_seconds(process.pid)
    finally:
        process.wait(30)
    names = {name for name, _ in after.values()}
    assert {"C1 CompilerThre", "C2 CompilerThre"} <= names, names
    spent = jit_seconds(before, after)
    total = sum(cpu for _, cpu in after.values()) - sum(cpu for _, cpu in before.values())
    assert 0 < spent < total, (spent, total)
