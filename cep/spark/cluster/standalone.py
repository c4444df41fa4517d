"""A Spark standalone cluster (one master, N workers) on 127.0.0.1: an emulated cluster.

Why it exists: ``local[*]`` runs every task inside the driver's JVM, so it cannot show
that cep's Python functions, state stores and checkpoints survive being shipped to
separate executor processes, nor what balancing buys when every engine has a node of
its own (the DLB paper's setting: 5 engines, each on its own processors). A standalone
master and workers, launched from the ``bin/spark-class`` script that ships inside the
pyspark wheel, can: no separate Spark download, no network beyond loopback.

A node per engine: ``start(workers=N, cpus_per_worker=C)`` puts each worker in a cgroup
of its own with a CPU quota of C cores (``cpu_quota.py``); the executor the worker
forks and that executor's Python workers are born in it, so a node's whole work (its
input tasks and its engine) shares C cores, whatever else the machine runs. With one
task slot per worker and N engines, each engine's task runs on a node of its own
(Spark keeps a stateful partition on the executor that holds its state store), so the
busiest engine, not the machine's cores, sets a batch's length.

Nodes leave the way they leave a real standalone cluster (``remove_workers``): the
worker is decommissioned first (``SIGPWR``, Spark's ``spark.worker.decommission.signal``:
its master marks it DECOMMISSIONED, gives it no more executors and tells each
application, whose executors there finish their running tasks, hand their shuffle
blocks to the other executors and exit), then its process group is stopped. The
master's ``/workers/kill/`` endpoint cannot be used here: it decommissions every worker
of a host, and all of these are on 127.0.0.1.

Why the details: each daemon runs in its own process group so ``stop`` also reaches the
executor JVMs a worker forked (their ``pyspark.daemon`` Python workers make their own
group, but exit as soon as their executor's pipe closes); ports are picked free and
Spark's port retries are switched off (``spark.port.maxRetries=0``) so a lost race fails
loudly instead of silently moving the master to a port nobody polls; readiness is read
from the master's ``/json/`` endpoint (through a proxy-less opener, since loopback must
never go through ``http_proxy``).

Which Python the executors run is not the cluster's to choose: PySpark sends the
driver's ``PYSPARK_PYTHON`` (read when the SparkContext is created, ``python3`` from
``PATH`` if unset) with every Python function, and the workers' own environment and
``spark.pyspark.python`` are ignored. See ``driver_conf``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pyspark

from cep.spark.cluster.cpu_quota import CpuGroup, CpuGroups

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# Master and worker daemons only book-keep; executors get their own ``spark.executor.memory``.
DAEMON_MEMORY = "512m"
# Book-keeping needs no C2 JIT or parallel GC threads; without them the three daemon JVMs
# start in about half the time on a 2-core machine (7 s instead of 16 s under load).
DAEMON_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Workers take SIGPWR as "decommission yourself" (the application must enable it too:
# ``spark.decommission.enabled``, see ``emulated.EmulatedCluster.spark_conf``).
WORKER_OPTS = "-Dspark.decommission.enabled=true"
# How long a decommissioned worker's executors may take to finish their running tasks
# and exit before the worker is stopped anyway (Spark then runs those tasks again).
DRAIN_S = 120.0
# How long the master may take to list a worker DECOMMISSIONED after its SIGPWR.
DECOMMISSION_S = 15.0
# What an executor's log says about its decommissioning (Spark's own words).
_DECOMMISSION_WORDS = ("ecommission", "shutdown", "migrat", "Blocked", "exit")
# A port grabbed by someone else between probing and binding makes the master exit;
# a fresh pair of ports is tried this many times before giving up.
MASTER_ATTEMPTS = 3
LOG_TAIL_LINES = 40


class ClusterStartError(RuntimeError):
    """The cluster did not come up; the message carries the daemons' log tails."""


@dataclass
class _Daemon:
    """One spark-class process and the log file its stdout/stderr go to."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        self.log_file.flush()
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        tail = "\n".join(text.splitlines()[-lines:])
        return f"--- {self.name} (exit code {self.process.poll()}), last {lines} lines:\n{tail}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _spark_home() -> Path:
    """The pyspark package directory: the wheel lays it out like a Spark distribution."""
    return Path(pyspark.__file__).resolve().parent


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


class LocalStandaloneCluster:
    """Start with ``start()`` (or ``with``), connect with ``master_url``, end with ``stop()``.

    ``with LocalStandaloneCluster() as cluster`` starts the default shape (2 workers with
    1 core and 1g each); ``with LocalStandaloneCluster().start(workers=3) as cluster``
    picks another one, ``start(workers=5, cpus_per_worker=0.4)`` five nodes of 0.4 of a
    core each. ``stop`` is idempotent and also runs at interpreter exit, so a crashed
    run does not leave Java daemons (or cgroups) behind.
    """

    def __init__(self, startup_timeout: float = 60.0) -> None:
        self.startup_timeout = startup_timeout
        self.spark_home = _spark_home()
        self.spark_class = self.spark_home / "bin" / "spark-class"
        if not os.access(self.spark_class, os.X_OK):
            raise FileNotFoundError(f"no executable spark-class in the pyspark install: "
                                    f"{self.spark_class}")
        self.workers = 0  # the workers in the cluster now
        self.cores_per_worker = 0
        self._worker_daemons: list[_Daemon] = []  # in the order they were started
        self._next_worker = 0  # the index the next worker's name, work dir and cgroup take
        self._master_port: int | None = None
        self._webui_port: int | None = None
        self._root: Path | None = None
        self._daemons: list[_Daemon] = []
        self._quotas: CpuGroups | None = None
        self.node_groups: list[CpuGroup] = []  # worker i's cgroup, with a CPU quota
        self._sigterm_before: Any = None  # the handler start() replaced, if it did
        # Bypass any http_proxy/https_proxy in the environment: the master is on loopback.
        self._http = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # -- command lines and environment -------------------------------------------------

    def master_command(self, port: int, webui_port: int) -> list[str]:
        """The master's command line, bound to 127.0.0.1 only."""
        return [str(self.spark_class), MASTER_CLASS,
                "--host", HOST, "--port", str(port), "--webui-port", str(webui_port)]

    def worker_command(self, master_url: str, cores: int, memory: str,
                       work_dir: Path) -> list[str]:
        """A worker's command line; ports 0 let the OS pick, since nobody needs to know them."""
        return [str(self.spark_class), WORKER_CLASS, master_url,
                "--host", HOST, "--port", "0", "--webui-port", "0",
                "--cores", str(cores), "--memory", memory, "--work-dir", str(work_dir)]

    def environment(self, conf_dir: Path) -> dict[str, str]:
        """The daemons' environment: this Spark, loopback only, small JVMs, no port drift.

        ``conf_dir`` is an empty directory so a stray ``spark-defaults.conf`` or
        ``spark-env.sh`` on the machine cannot change the cluster.
        """
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(self.spark_home),
            "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOCAL_HOSTNAME": HOST,
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTS,
            # no REST submission server: it always binds port 6066, so a second cluster
            # on the machine (another test module's, say) failed to start
            "SPARK_MASTER_OPTS": "-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false",
            "SPARK_WORKER_OPTS": WORKER_OPTS,
        })
        for name in ("SPARK_MASTER_HOST", "SPARK_MASTER_PORT", "SPARK_WORKER_PORT",
                     "SPARK_MASTER_WEBUI_PORT", "SPARK_WORKER_WEBUI_PORT",
                     "SPARK_WORKER_INSTANCES", "SPARK_NO_DAEMONIZE"):
            env.pop(name, None)
        return env

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether daemons are running; ``with`` starts the default shape only if not."""
        return bool(self._daemons)

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>``, for ``SparkSession.builder.master``."""
        if self._master_port is None:
            raise RuntimeError("the cluster is not started")
        return f"spark://{HOST}:{self._master_port}"

    @property
    def webui_url(self) -> str:
        """The master's web UI, whose ``/json/`` page says which workers are ALIVE."""
        if self._webui_port is None:
            raise RuntimeError("the cluster is not started")
        return f"http://{HOST}:{self._webui_port}"

    @property
    def root(self) -> Path:
        """The temp dir holding ``logs/``, ``conf/`` and each worker's ``work-<n>/``."""
        if self._root is None:
            raise RuntimeError("the cluster is not started")
        return self._root

    @property
    def log_dir(self) -> Path:
        """One ``<daemon>.log`` per daemon (stdout and stderr); executors log in work dirs."""
        return self.root / "logs"

    @property
    def pids(self) -> list[int]:
        """Process (and process-group) ids of the master and workers."""
        return [daemon.process.pid for daemon in self._daemons]

    def driver_conf(self, executor_memory: str = "1g") -> dict[str, str]:
        """Session settings a driver on this machine needs to use the cluster fully.

        The driver must advertise 127.0.0.1, or executors would call back on whatever
        address the hostname resolves to. ``spark.cores.max`` plus a registered-resources
        ratio of 1 make the first job wait until an executor on every worker has
        registered, instead of the first executor up taking all the tasks.

        Not a setting: executors start the Python that the driver's ``PYSPARK_PYTHON``
        environment variable names when the SparkContext is created, so the driver
        process must export it (as ``sys.executable``, for executors to import the same
        pyspark, pandas and cep) before ``getOrCreate``.
        """
        total_cores = self.workers * self.cores_per_worker
        return {
            "spark.master": self.master_url,
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.executor.memory": executor_memory,
            "spark.executor.cores": str(self.cores_per_worker),
            "spark.cores.max": str(total_cores),
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{self.startup_timeout:.0f}s",
        }

    def start(self, workers: int = 2, cores_per_worker: int = 1, memory: str = "1g",
              cpus_per_worker: float | None = None) -> LocalStandaloneCluster:
        """Launch the master and ``workers`` workers; return once all are ALIVE.

        ``memory`` is what each worker may hand to executors, so it must be at least the
        driver's ``spark.executor.memory``. ``cpus_per_worker``: each worker (with its
        executor and Python workers) in a cgroup capped at that many cores (None: no
        cap; the master and the driver are never capped). Raises ``CgroupError`` (one
        line) where quotas cannot be set, ``ClusterStartError`` (with log tails) if the
        cluster is not up within ``startup_timeout`` seconds.
        """
        if self.started:
            raise RuntimeError("the cluster is already started")
        if workers < 1 or cores_per_worker < 1:
            raise ValueError("need at least one worker with at least one core")
        self.cores_per_worker = cores_per_worker
        self._root = Path(tempfile.mkdtemp(prefix="cep-spark-cluster-"))
        (self._root / "conf").mkdir()
        self.log_dir.mkdir()
        atexit.register(self.stop)
        self._exit_on_sigterm()
        try:
            if cpus_per_worker is not None:  # before any process: a refusal starts none
                self._quotas = CpuGroups()
            deadline = time.monotonic() + self.startup_timeout
            self._start_master(deadline)
            self._start_workers(workers, memory, cpus_per_worker, deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def add_workers(self, count: int, memory: str = "1g",
                    cpus_per_worker: float | None = None) -> None:
        """``count`` more workers of the started shape join the cluster (a node joining
        while a job runs; its master gives a running application executors on them up
        to the application's ``spark.cores.max``); return once all are ALIVE. A cluster
        started with CPU quotas needs ``cpus_per_worker``."""
        if not self.started:
            raise RuntimeError("the cluster is not started")
        if (self._quotas is None) != (cpus_per_worker is None):
            raise ValueError("cpus_per_worker is needed exactly when the cluster has quotas")
        self._start_workers(count, memory, cpus_per_worker,
                            time.monotonic() + self.startup_timeout)

    def _start_workers(self, count: int, memory: str, cpus_per_worker: float | None,
                       deadline: float) -> None:
        """Launch ``count`` workers (each in its node's cgroup where there are quotas)
        and wait until the master lists as many ALIVE as the cluster has."""
        for index in range(self._next_worker, self._next_worker + count):
            work_dir = self.root / f"work-{index}"
            work_dir.mkdir()
            command = self.worker_command(self.master_url, self.cores_per_worker, memory,
                                          work_dir)
            if self._quotas is not None:
                assert cpus_per_worker is not None
                group = self._quotas.add(f"node-{index}", cpus_per_worker)
                self.node_groups.append(group)
                command = group.join_command(command)
            self._worker_daemons.append(self._launch(f"worker-{index}", command))
        self._next_worker += count
        self.workers += count
        self._wait(deadline, lambda state: _alive_workers(state) >= self.workers,
                   f"{self.workers} ALIVE workers")

    def remove_workers(self, count: int, drain_s: float = DRAIN_S,
                       report: Callable[[dict[str, Any]], None] | None = None
                       ) -> list[dict[str, Any]]:
        """The ``count`` newest workers leave while a job may run, one after another;
        return once the master lists only the workers that stay, a record per worker.

        Each is decommissioned first (``SIGPWR``): its master stops giving it executors
        and an application with ``spark.decommission.enabled`` lets its executors there
        finish their running tasks, migrate their shuffle blocks and exit; a worker whose
        master did not list it DECOMMISSIONED within ``DECOMMISSION_S``, or whose
        executors did not exit within ``drain_s``, is stopped anyway (``forced``, with
        what held it: a stage whose map outputs it held then runs again, and Spark fails
        a batch whose input stage cannot). Then its process group is stopped. One at a
        time, as an operator rolls nodes out. ``report`` is told each worker's record
        before the worker is stopped (what held a forced one is known even if the job
        fails once it is gone). A node's cgroup stays until ``stop`` (its CPU count is
        still read), empty."""
        if not self.started:
            raise RuntimeError("the cluster is not started")
        if not 1 <= count < self.workers:
            raise ValueError(f"{count} of {self.workers} workers cannot leave: one must stay")
        began, out = time.monotonic(), []
        for daemon in reversed(self._worker_daemons[-count:]):
            out.append({"worker": daemon.name, **self._decommission(daemon, drain_s)})
            if report is not None:
                report(out[-1])
            self._retire(daemon)
            self.workers -= 1
            self._wait(time.monotonic() + self.startup_timeout,
                       lambda state: _workers_in(state, "ALIVE", "DECOMMISSIONED")
                       == self.workers, f"only {self.workers} workers listed")
            out[-1]["gone_s"] = round(time.monotonic() - began, 2)
        return out

    def crash_worker(self) -> str:
        """The newest worker dies as a node does: its whole process group (the worker,
        its executors) is killed with SIGKILL, with no decommissioning, so its shuffle
        output and its executors' state stores are lost with it; its Python workers exit
        once their executor's pipe closes. Returns its name. For tests of a node lost
        while a job runs; ``remove_workers`` is the graceful way out."""
        if not self.started or self.workers < 2:
            raise RuntimeError("a worker can crash only while another one stays")
        daemon = self._worker_daemons[-1]
        _signal_pid(-daemon.process.pid, signal.SIGKILL)
        self._retire(daemon)
        self.workers -= 1
        return daemon.name

    def _decommission(self, daemon: _Daemon, drain_s: float) -> dict[str, Any]:
        """SIGPWR one worker; wait until its master lists it DECOMMISSIONED and its
        executors exited (its process group holds the worker alone)."""
        began = time.monotonic()
        before = _workers_in(self.master_state(), "DECOMMISSIONED")
        _signal_pid(daemon.process.pid, signal.SIGPWR)
        listed = _poll_until(lambda: _workers_in(self.master_state(), "DECOMMISSIONED")
                             > before, DECOMMISSION_S)
        decommissioned = time.monotonic() - began
        drained = listed and _poll_until(
            lambda: _group_members(daemon.process.pid) <= {daemon.process.pid}, drain_s)
        record = {"decommissioned": listed, "forced": not drained,
                  "decommissioned_s": round(decommissioned, 2),
                  "drained_s": round(time.monotonic() - began, 2)}
        if not drained:  # what kept it: its processes, its executors' last words on it
            record["held_by"] = (_commands(_group_members(daemon.process.pid)
                                           - {daemon.process.pid})
                                 + self._executor_log_tail(daemon))
        return record

    def _executor_log_tail(self, daemon: _Daemon, lines: int = 8) -> list[str]:
        """The executors' last log lines about decommissioning, in a worker's work dir."""
        work = self.root / daemon.name.replace("worker-", "work-")
        tail: list[str] = []
        for log in sorted(work.glob("app-*/*/stderr")):
            text = log.read_text(encoding="utf-8", errors="replace").splitlines()
            tail += [line[:200] for line in text
                     if any(word in line for word in _DECOMMISSION_WORDS)][-lines:]
        return tail

    def _retire(self, daemon: _Daemon, grace: float = 10.0) -> None:
        """Stop one worker's process group (the worker, any executor left) for good."""
        _end_daemons([daemon], grace)
        for daemons in (self._daemons, self._worker_daemons):  # stop() may have run
            if daemon in daemons:
                daemons.remove(daemon)

    def _start_master(self, deadline: float) -> None:
        """Launch the master on fresh ports, retrying if a port was taken meanwhile."""
        for attempt in range(1, MASTER_ATTEMPTS + 1):
            self._master_port, self._webui_port = free_port(), free_port()
            master = self._launch(f"master-{attempt}",
                                  self.master_command(self._master_port, self._webui_port))
            try:
                self._wait(deadline, self._is_our_master, "the master", only=master)
                return
            except ClusterStartError:
                if master.process.poll() is None or attempt == MASTER_ATTEMPTS:
                    raise
                self._daemons.remove(master)
                master.log_file.close()

    def _is_our_master(self, state: dict[str, Any]) -> bool:
        return state.get("status") == "ALIVE" and state.get("url") == self.master_url

    def _launch(self, name: str, command: list[str]) -> _Daemon:
        assert self._root is not None
        log_path = self.log_dir / f"{name}.log"
        log_file = log_path.open("wb")
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
            env=self.environment(self._root / "conf"), cwd=self._root,
            start_new_session=True)
        daemon = _Daemon(name, process, log_path, log_file)
        self._daemons.append(daemon)
        return daemon

    def master_state(self) -> dict[str, Any]:
        """The master's JSON status (workers, apps, cores), as its web UI serves it."""
        with self._http.open(f"{self.webui_url}/json/", timeout=5) as response:
            return json.load(response)

    def _wait(self, deadline: float, ready: Callable[[dict[str, Any]], bool], what: str,
              only: _Daemon | None = None) -> None:
        """Poll the master until ``ready(state)``; fail fast if a daemon dies."""
        watched = [only] if only is not None else self._daemons
        while True:
            dead = [d for d in watched if d.process.poll() is not None]
            if dead:
                raise ClusterStartError(self._failure(f"{dead[0].name} exited while waiting "
                                                      f"for {what}"))
            with contextlib.suppress(OSError, ValueError):
                if ready(self.master_state()):
                    return
            if time.monotonic() > deadline:
                raise ClusterStartError(self._failure(
                    f"no {what} after {self.startup_timeout:.0f}s"))
            time.sleep(0.25)

    def _failure(self, reason: str) -> str:
        tails = "\n".join(daemon.log_tail() for daemon in self._daemons)
        return f"Spark standalone cluster failed to start: {reason}\n{tails}"

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM every daemon's process group, SIGKILL what is left, delete the temp dir.

        Executors' ``pyspark.daemon`` processes are not waited for; they notice their
        executor is gone and exit within moments. With CPU quotas, a node's cgroup lists
        every process the node ran: what is still in it after ``grace`` is killed, and
        the cgroups are removed.
        """
        _end_daemons(self._daemons, grace)
        self._daemons.clear()
        self._worker_daemons.clear()
        self.workers = self._next_worker = 0
        if self._quotas is not None:
            _end_group_members(self.node_groups, grace)
            self._quotas.close()
            self._quotas = None
            self.node_groups = []
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
        self._master_port = self._webui_port = None
        atexit.unregister(self.stop)
        if self._sigterm_before is not None:
            signal.signal(signal.SIGTERM, self._sigterm_before)
            self._sigterm_before = None

    def _exit_on_sigterm(self) -> None:
        """Where nobody handles SIGTERM (``timeout``, ``kill``), make it exit through
        ``SystemExit``: by default it ends the process without running ``atexit`` or
        ``finally``, and the daemons and the nodes' cgroups would be left behind."""
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
            self._sigterm_before = signal.signal(signal.SIGTERM, _exit_on_signal)

    def __enter__(self) -> LocalStandaloneCluster:
        if not self.started:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


def _alive_workers(state: dict[str, Any]) -> int:
    return _workers_in(state, "ALIVE")


def _workers_in(state: dict[str, Any], *states: str) -> int:
    """How many workers the master's JSON status lists in one of ``states``."""
    return sum(1 for worker in state.get("workers", []) if worker.get("state") in states)


def _end_daemons(daemons: list[_Daemon], grace: float) -> None:
    """SIGTERM each daemon's process group, give them ``grace`` seconds together, then
    SIGKILL the groups: executors forked by a worker share its group and may outlive it."""
    for daemon in daemons:
        _signal_group(daemon.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for daemon in daemons:
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.process.wait(timeout=max(0.0, deadline - time.monotonic()))
    for daemon in daemons:
        _signal_group(daemon.process.pid, signal.SIGKILL)
        daemon.process.wait()
        daemon.log_file.close()


def _poll_until(done: Callable[[], bool], timeout: float) -> bool:
    """Whether ``done()`` held within ``timeout`` seconds (a master that does not
    answer a poll is asked again)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, ValueError):
            if done():
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)


def _group_members(pgid: int) -> set[int]:
    """The processes of process group ``pgid`` now (a worker and the executors it forked;
    an executor's Python workers make a group of their own)."""
    members = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                members.add(int(stat.parent.name))
    return members


def _end_group_members(groups: list[CpuGroup], grace: float) -> None:
    """Wait up to ``grace`` seconds for the processes left in ``groups`` (Python workers
    outlive their executor by moments) to exit, then SIGKILL the rest and wait for the
    kernel to take them out (a dead process leaves its cgroup before it is reaped)."""
    deadline, killed = time.monotonic() + grace, False
    while (left := [pid for group in groups for pid in group.pids()]):
        if time.monotonic() > deadline:
            if killed:
                return  # unkillable: removing the groups will say which
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            deadline, killed = time.monotonic() + grace, True
        time.sleep(0.1)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _commands(pids: set[int]) -> list[str]:
    """Each process's command line, cut short (for a record of what was running)."""
    out = []
    for pid in sorted(pids):
        with contextlib.suppress(OSError):
            raw = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            out.append(f"{pid} {raw.decode(errors='replace')[:160]}")
    return out


def _signal_pid(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
