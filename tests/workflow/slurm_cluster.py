"""Slurm clusters on this machine for the integration tests, started here (there is no systemd) and stopped by
PID: one node (LocalSlurm), or two nodes in network namespaces of their own (TwoNodeSlurm). Both need root
and envs/slurm.apt.txt (``make test`` installs it on Debian). They raise, never skip, when Slurm cannot be
started."""
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import ClassVar

# The plugin's job steps drop SLURM_CONF, so the configuration must be at Slurm's default path.
SLURM_CONF = Path("/etc/slurm/slurm.conf")
MARKER = "# written by dlbench's Slurm integration test"
MUNGE_PID = Path("/run/munge/munged.pid")


def _memory_mb(share: float) -> int:
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * share)


def _conf(spool: Path, controller: str, nodes: str, partitions: str) -> str:
    """slurm.conf; ``%n`` (the node's name) keeps each slurmd's files apart where two run on this machine. A
    cancelled job's processes get SIGKILL 5 s after SIGTERM (KillWait; 30 s by default)."""
    return f"""{MARKER}
ClusterName=dlbench
SlurmctldHost={controller}
SlurmUser=root
AuthType=auth/munge
StateSaveLocation={spool}/ctld
SlurmdSpoolDir={spool}/d-%n
SlurmctldPidFile={spool}/slurmctld.pid
SlurmdPidFile={spool}/slurmd-%n.pid
SlurmctldLogFile={spool}/slurmctld.log
SlurmdLogFile={spool}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
KillWait=5
{nodes}
{partitions}
"""


def _munged_running() -> bool:
    try:
        os.kill(int(MUNGE_PID.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


class LocalSlurm:
    """munged, slurmctld and one slurmd named localhost, with two partitions (debug, the default, and second)."""

    NODES = ("localhost",)

    def __init__(self, spool: Path):
        self.spool, self.daemons, self.started_munged = spool, [], False
        self.made_conf_dir = self.wrote_conf = False

    def conf(self) -> str:
        node = (f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={_memory_mb(0.9)} "
                "Features=dlbench State=UNKNOWN")
        partitions = ("PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n"
                      "PartitionName=second Nodes=localhost MaxTime=INFINITE State=UP")
        return _conf(self.spool, "localhost", node, partitions)

    def client(self, command: list[str]) -> list[str]:
        """``command`` as a Slurm client (sinfo, sbatch, Snakemake) runs it: here, as it is."""
        return command

    def daemon_commands(self) -> list[list[str]]:
        return [["/usr/sbin/slurmctld", "-D", "-i"], ["/usr/sbin/slurmd", "-D", "-N", "localhost"]]

    def start(self, timeout_s: float = 60) -> None:
        missing = [tool for tool in ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue")
                   if not shutil.which(tool, path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", ""))]
        if missing:
            raise RuntimeError(f"Slurm is not installed (missing {', '.join(missing)}): "
                               "apt-get install $(cat envs/slurm.apt.txt)")
        if os.geteuid() != 0:
            raise RuntimeError("starting Slurm's daemons and writing /etc/slurm/slurm.conf needs root")
        if SLURM_CONF.exists() and MARKER not in SLURM_CONF.read_text():
            raise RuntimeError(f"{SLURM_CONF} belongs to a real Slurm installation: not overwritten")
        for directory in ("ctld", *(f"d-{node}" for node in self.NODES)):
            (self.spool / directory).mkdir(parents=True, exist_ok=True)
        self.made_conf_dir = not SLURM_CONF.parent.exists()
        SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SLURM_CONF.write_text(self.conf())
        self.wrote_conf = True
        if not _munged_running():
            MUNGE_PID.parent.mkdir(parents=True, exist_ok=True)
            shutil.chown(MUNGE_PID.parent, "munge", "munge")
            subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
            self.started_munged = True
        for command in self.daemon_commands():
            self.daemons.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = subprocess.run(self.client(["sinfo", "--noheader", "--Node", "--format=%N %T"]),
                                   capture_output=True, text=True, check=False)
            if dict(line.split() for line in state.stdout.splitlines()) == dict.fromkeys(self.NODES, "idle"):
                return  # (a node is listed once per partition)
            if any(daemon.poll() is not None for daemon in self.daemons):
                break
            time.sleep(0.5)
        logs = "\n".join(path.read_text()[-1500:] for path in self.spool.glob("*.log"))
        raise RuntimeError(f"Slurm did not come up (sinfo: {state.stdout.strip()!r} {state.stderr.strip()!r}):\n{logs}")

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        if self.started_munged and _munged_running():
            os.kill(int(MUNGE_PID.read_text()), 15)
        if self.wrote_conf:  # the machine is left as the test found it: no Slurm configuration of ours
            SLURM_CONF.unlink(missing_ok=True)
        if self.made_conf_dir:
            SLURM_CONF.parent.rmdir()


class TwoNodeSlurm(LocalSlurm):
    """Two Slurm nodes, each a slurmd in a network namespace of its own (``dlbench-node1``, ``dlbench-node2``)
    with its own hostname (a UTS namespace), its own spool and log; slurmctld and the clients in a third
    (``dlbench-ctl``), whose bridge links the nodes' veth pairs. Addresses (10.231.0.0/24) are only on those
    links: nothing here reaches, or is reached from, outside the three namespaces. The names resolve through the
    cluster's hosts file, bound over /etc/hosts in each daemon's mount namespace. The nodes carry a
    feature and a partition each (first, second), and share ``both`` (the default)."""

    NODES = ("dlnode1", "dlnode2")
    CONTROLLER, PREFIX = "dlctl", "dlbench-"
    SUBNET = "10.231.0"
    ADDRESSES: ClassVar = {"dlctl": f"{SUBNET}.1", "dlnode1": f"{SUBNET}.11", "dlnode2": f"{SUBNET}.12"}
    FEATURES: ClassVar = {"dlnode1": "first", "dlnode2": "second"}

    def __init__(self):
        # Short: a job step's Unix socket is <spool>/d-<node>/<node>_<job>.<step>, at most 108 bytes.
        super().__init__(Path(tempfile.mkdtemp(prefix="dlbench-slurm-", dir="/tmp")))
        self.namespaces: list[str] = []

    @classmethod
    def namespace(cls, host: str) -> str:
        return f"{cls.PREFIX}{host.removeprefix('dl')}"

    def conf(self) -> str:
        # Each node is this machine: its cores and memory, shared (the workflow's jobs ask for 16 GB)
        cpus, memory = os.cpu_count(), _memory_mb(0.9)
        nodes = "\n".join(f"NodeName={node} NodeAddr={self.ADDRESSES[node]} CPUs={cpus} RealMemory={memory} "
                          f"Features={self.FEATURES[node]} State=UNKNOWN" for node in self.NODES)
        both = f"PartitionName=both Nodes={','.join(self.NODES)} Default=YES MaxTime=INFINITE State=UP"
        partitions = "\n".join([both, *(f"PartitionName={self.FEATURES[node]} Nodes={node} MaxTime=INFINITE State=UP"
                                        for node in self.NODES)])
        return _conf(self.spool, f"{self.CONTROLLER}({self.ADDRESSES[self.CONTROLLER]})", nodes, partitions)

    def as_host(self, host: str, command: list[str]) -> list[str]:
        """``command`` run as on ``host``: in its network namespace, under its hostname (slurmctld checks its own)
        and with its hosts file over /etc/hosts, both in namespaces of the command's own (UTS, mount)."""
        return ["nsenter", f"--net=/run/netns/{self.namespace(host)}", "unshare", "--uts", "--mount", "sh", "-c",
                f'mount --bind {self.spool / "hosts"} /etc/hosts && hostname {host} && exec "$@"', "sh", *command]

    def client(self, command: list[str]) -> list[str]:
        return self.as_host(self.CONTROLLER, command)

    def daemon_commands(self) -> list[list[str]]:
        return [self.client(["/usr/sbin/slurmctld", "-D", "-i"]),
                *(self.as_host(node, ["/usr/sbin/slurmd", "-D", "-N", node]) for node in self.NODES)]

    def _ip(self, *arguments: str) -> None:
        subprocess.run(["ip", *arguments], check=True, capture_output=True)

    def start(self, timeout_s: float = 60) -> None:
        taken = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split())
        hosts = ["127.0.0.1 localhost", *(f"{address} {host}" for host, address in self.ADDRESSES.items())]
        self.spool.mkdir(parents=True, exist_ok=True)
        (self.spool / "hosts").write_text("\n".join(hosts) + "\n")
        for host in self.ADDRESSES:
            name = self.namespace(host)
            if name in taken:  # left behind by a test that was killed, unless something runs in it
                if subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True,
                                  check=False).stdout.strip():
                    raise RuntimeError(f"network namespace {name} is in use: another test's cluster?")
                self._ip("netns", "del", name)
            self._ip("netns", "add", name)
            self.namespaces.append(name)
            self._ip("-n", name, "link", "set", "lo", "up")
        controller = self.namespace(self.CONTROLLER)
        self._ip("-n", controller, "link", "add", "bridge0", "type", "bridge")
        self._ip("-n", controller, "addr", "add", f"{self.ADDRESSES[self.CONTROLLER]}/24", "dev", "bridge0")
        self._ip("-n", controller, "link", "set", "bridge0", "up")
        for index, node in enumerate(self.NODES):
            name, port = self.namespace(node), f"port{index}"
            self._ip("link", "add", f"dlbench{index}", "netns", name, "type", "veth", "peer", "name", port,
                     "netns", controller)
            self._ip("-n", name, "link", "set", f"dlbench{index}", "name", "eth0")
            self._ip("-n", name, "addr", "add", f"{self.ADDRESSES[node]}/24", "dev", "eth0")
            self._ip("-n", name, "link", "set", "eth0", "up")
            self._ip("-n", controller, "link", "set", port, "master", "bridge0")
            self._ip("-n", controller, "link", "set", port, "up")
        super().start(timeout_s)

    def _kill_what_runs_in_the_namespaces(self) -> None:
        """Whatever the daemons left (a job step's slurmstepd outlives its slurmd, and its processes with it)."""
        for _ in range(50):
            pids = [int(pid) for name in self.namespaces for pid in subprocess.run(
                ["ip", "netns", "pids", name], capture_output=True, text=True, check=False).stdout.split()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        raise RuntimeError(f"processes in the cluster's namespaces survived SIGKILL: {pids}")

    def stop(self) -> None:
        try:
            super().stop()
        finally:  # deleting a namespace deletes its links; the bridge's ports go with the nodes' veths
            self._kill_what_runs_in_the_namespaces()
            for name in reversed(self.namespaces):
                subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)
            shutil.rmtree(self.spool, ignore_errors=True)
