"""CPU quotas for groups of processes: one cgroup (v1 ``cpu`` controller) per group.

Why: an emulated cluster (``cluster.py``) runs N Spark workers on one machine, and a
worker stands for a node only if it cannot use more than a node's processors. A cgroup
caps a process and everything it forks (the worker's executor JVM, the executor's
``pyspark.daemon`` and its Python workers) at ``cpu.cfs_quota_us`` of CPU time per
``cpu.cfs_period_us``: a quota of 40,000 µs per 100,000 µs is 0.4 of a core, however
many threads or processes share it. Processes join a group by writing their pid to its
``cgroup.procs`` and their children are born in it, so a launcher that moves itself
before it ``exec``s the worker (``join_command``) puts the whole node in, with no race.

Why v1: the machines cep is measured on mount the v1 ``cpu`` controller at
``/sys/fs/cgroup/cpu``, writable by root. Where the v1 ``cpuacct`` controller is mounted
beside it, each group gets a twin there too, so a node's CPU seconds can be read
(``usage_s``) and the quota checked against them. Groups are made under one parent per
:class:`CpuGroups` (``cep-nodes-<pid>-<n>``) and removed when it closes; a group still
holding a process cannot be removed, so closing says which pids are left.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

CGROUPS = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the kernel's default CFS period: 0.1 s
_serial = itertools.count()


class CgroupError(RuntimeError):
    """A quota could not be set up or torn down; the message says why in one line."""


@dataclass(frozen=True)
class CpuGroup:
    """One cgroup with a CPU quota of ``cpus`` cores, and its CPU-accounting twin."""

    path: Path
    cpus: float
    accounting: Path | None = None

    @property
    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in (self.path, self.accounting) if d is not None]

    def join_command(self, command: list[str]) -> list[str]:
        """``command`` run so that it starts inside this group: a shell writes its own
        pid to ``cgroup.procs`` and then ``exec``s the command (same pid, same group,
        and every child it forks after)."""
        files = self.procs_files
        joins = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(files)))
        return ["/bin/sh", "-c", f'{joins} && shift {len(files)} && exec "$@"', "sh",
                *map(str, files), *command]

    def pids(self) -> list[int]:
        """The processes in the group now (each process once, threads folded)."""
        return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]

    def throttling(self) -> dict[str, int]:
        """The kernel's counts for the group: CFS periods with runnable tasks, those in
        which the quota ran out (``nr_throttled``), and nanoseconds spent throttled."""
        pairs = (line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
        return {name: int(value) for name, value in pairs}

    def usage_s(self) -> float | None:
        """CPU seconds the group's processes used so far (None without ``cpuacct``)."""
        if self.accounting is None:
            return None
        return int((self.accounting / "cpuacct.usage").read_text()) / 1e9


class CpuGroups:
    """Make cgroups with CPU quotas under one parent; ``close`` (or ``with``) removes them.

    Raises :class:`CgroupError` with a one-line reason where the controller is missing
    or not writable (not root, a read-only mount, cgroup v2 only).
    """

    def __init__(self, cgroups: Path | None = None) -> None:
        """``cgroups``: where the v1 controllers are mounted (default ``CGROUPS``)."""
        cgroups = cgroups or CGROUPS
        name = f"cep-nodes-{os.getpid()}-{next(_serial)}"
        controller = cgroups / "cpu"
        if not (controller / "cpu.cfs_quota_us").exists():
            raise CgroupError(f"no cgroup v1 cpu controller at {controller}: CPU quotas "
                              "for the nodes need it mounted there")
        self.parent = controller / name
        try:
            self.parent.mkdir()
        except OSError as err:
            raise CgroupError(f"cannot create a cgroup under {controller} ({err.strerror}):"
                              " CPU quotas for the nodes need root") from None
        accounting = cgroups / "cpuacct"
        self.accounting: Path | None = accounting / name
        try:
            self.accounting.mkdir()
        except OSError:  # only a measurement is lost: node CPU seconds
            self.accounting = None
        self.groups: list[CpuGroup] = []

    def add(self, name: str, cpus: float) -> CpuGroup:
        """A new group ``name`` capped at ``cpus`` cores (0.4: 40 ms per 100 ms)."""
        if not cpus > 0:
            raise ValueError(f"a CPU quota must be positive, got {cpus}")
        accounting = self.accounting / name if self.accounting is not None else None
        group = CpuGroup(self.parent / name, cpus, accounting)
        try:
            group.path.mkdir()
            (group.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group.path / "cpu.cfs_quota_us").write_text(str(round(cpus * PERIOD_US)))
            if accounting is not None:
                accounting.mkdir()
        except OSError as err:
            raise CgroupError(f"cannot set the CPU quota of {group.path} "
                              f"({err.strerror})") from None
        self.groups.append(group)
        return group

    def close(self) -> None:
        """Remove every group and the parents; :class:`CgroupError` names the pids that
        keep a group alive (their owner must end them first)."""
        left = {}
        for group in [*self.groups]:
            try:
                for directory in (group.path, group.accounting):
                    if directory is not None:
                        with contextlib.suppress(FileNotFoundError):
                            directory.rmdir()
                self.groups.remove(group)
            except OSError:
                left[group.path.name] = group.pids()
        if left:
            raise CgroupError(f"cgroups still hold processes, not removed: {left}")
        for directory in (self.parent, self.accounting):
            if directory is not None:
                with contextlib.suppress(FileNotFoundError):
                    directory.rmdir()

    def __enter__(self) -> CpuGroups:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
