"""CPU quotas per group of processes (``cep.spark.cluster.cpu_quota``), on the machine's real
cgroup v1 controllers: a process started in a group and the processes it forks are in
it, a busy one gets no more than its quota, and closing removes every group it made."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cep.spark.cluster.cpu_quota import CGROUPS, CgroupError, CpuGroups

writable = pytest.mark.skipif(
    not os.access(CGROUPS / "cpu" / "cgroup.procs", os.W_OK),
    reason="needs root and the cgroup v1 cpu controller at /sys/fs/cgroup/cpu")

# spins for SPIN_S wall seconds, then prints its own CPU seconds and its child's cgroup
BUSY = """
import subprocess, sys, time
child = subprocess.run(["cat", "/proc/self/cgroup"], capture_output=True, text=True).stdout
started = time.monotonic()
while time.monotonic() - started < float(sys.argv[1]):
    pass
print(time.process_time())
print(next(line for line in child.splitlines() if ":cpu:" in line))
"""
SPIN_S = 2.0


@writable
def test_a_busy_process_and_its_children_stay_in_their_group_and_its_quota() -> None:
    with CpuGroups() as groups:
        group = groups.add("node-0", 0.3)
        assert (group.path / "cpu.cfs_quota_us").read_text().strip() == "30000"
        assert (group.path / "cpu.cfs_period_us").read_text().strip() == "100000"
        started = time.monotonic()
        done = subprocess.run(group.join_command([sys.executable, "-c", BUSY, str(SPIN_S)]),
                              capture_output=True, text=True, check=True)
        wall = time.monotonic() - started
        cpu_s, child_cgroup = done.stdout.splitlines()
        # the child the busy process forked was born in the group
        assert child_cgroup.endswith(f":cpu:/{groups.parent.name}/node-0")
        # 0.3 of a core at most (a period's slack at each end), though it wanted a whole one
        assert float(cpu_s) <= 0.3 * wall + 0.1
        assert float(cpu_s) >= 0.3 * SPIN_S / 3  # it did run: the cap is not a stop
        assert group.throttling()["nr_throttled"] > 0
        usage = group.usage_s()
        if usage is not None:  # the kernel's own count, the interpreter's start included
            assert float(cpu_s) <= usage <= 0.3 * wall + 0.1
    assert not groups.parent.exists()


@writable
def test_closing_names_the_processes_that_keep_a_group_then_removes_it() -> None:
    groups = CpuGroups()
    group = groups.add("node-1", 0.5)
    sleeper = subprocess.Popen(group.join_command(["sleep", "60"]))
    try:
        deadline = time.monotonic() + 30
        while sleeper.pid not in group.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.pids() == [sleeper.pid]
        kept = rf"still hold processes, not removed: {{'node-1': \[{sleeper.pid}\]}}"
        with pytest.raises(CgroupError, match=kept):
            groups.close()
    finally:
        sleeper.kill()
        sleeper.wait()
    groups.close()
    assert not group.path.exists() and not groups.parent.exists()
    assert groups.accounting is None or not groups.accounting.exists()


def test_without_a_cpu_controller_the_refusal_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(CgroupError) as refused:
        CpuGroups(tmp_path)
    assert str(refused.value) == (f"no cgroup v1 cpu controller at {tmp_path / 'cpu'}: CPU "
                                  "quotas for the nodes need it mounted there")


def test_a_quota_must_be_positive(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    groups = CpuGroups(tmp_path)  # a plain directory stands in for the controller
    with pytest.raises(ValueError, match="a CPU quota must be positive, got 0"):
        groups.add("node-0", 0)
