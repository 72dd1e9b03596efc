"""A one-node Slurm cluster on this machine, for the integration test: munged, slurmctld and slurmd
started here (there is no systemd) and stopped by PID. Needs root and envs/slurm.apt.txt
(``make test`` installs it on Debian). It raises, never skips, when Slurm cannot be started."""
import os
import shutil
import subprocess
import time
from pathlib import Path

# The plugin's job steps drop SLURM_CONF, so the configuration must be at Slurm's default path.
SLURM_CONF = Path("/etc/slurm/slurm.conf")
MARKER = "# written by dlbench's Slurm integration test"
MUNGE_PID = Path("/run/munge/munged.pid")


def _conf(spool: Path) -> str:
    memory_mb = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.9)
    return f"""{MARKER}
ClusterName=dlbench
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
StateSaveLocation={spool}/ctld
SlurmdSpoolDir={spool}/d
SlurmctldPidFile={spool}/slurmctld.pid
SlurmdPidFile={spool}/slurmd.pid
SlurmctldLogFile={spool}/slurmctld.log
SlurmdLogFile={spool}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={memory_mb} Features=dlbench State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=second Nodes=localhost MaxTime=INFINITE State=UP
"""


def _munged_running() -> bool:
    try:
        os.kill(int(MUNGE_PID.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


class LocalSlurm:
    def __init__(self, spool: Path):
        self.spool, self.daemons, self.started_munged = spool, [], False
        self.made_conf_dir = self.wrote_conf = False

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
        for directory in ("ctld", "d"):
            (self.spool / directory).mkdir(parents=True, exist_ok=True)
        self.made_conf_dir = not SLURM_CONF.parent.exists()
        SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SLURM_CONF.write_text(_conf(self.spool))
        self.wrote_conf = True
        if not _munged_running():
            MUNGE_PID.parent.mkdir(parents=True, exist_ok=True)
            shutil.chown(MUNGE_PID.parent, "munge", "munge")
            subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
            self.started_munged = True
        for command in (["/usr/sbin/slurmctld", "-D", "-i"], ["/usr/sbin/slurmd", "-D", "-N", "localhost"]):
            self.daemons.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True,
                                   check=False)
            if state.stdout.strip() == "idle":
                return
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
