"""What the host's counters say about a run's timed window: who else used its cores, and CPU energy.

Contention: a run holds its cores alone among dlbench's runs (:mod:`dlbench.hardware.slots`), but any other
process of the machine, or the hypervisor (steal time), may still take them. The kernel's per-core
busy time of the held cores, minus the CPU time of the run's own process tree, over the window is
the others' work: its share of the cores' capacity is ``contention_share``.

Energy: RAPL's counters (``/sys/class/powercap/intel-rapl*``: each package and its DRAM; AMD's
Zen CPUs expose theirs there too) over the window. They count the whole package, not only the
run's cores. Where there are none, or only root may read them (Linux since 5.10), the reason says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil

POWERCAP = Path("/sys/class/powercap")


@dataclass(frozen=True)
class HostSample:
    time: float
    cores_busy_s: float  # the held cores' busy time since boot (all processes, steal included)
    own_cpu_s: float  # the run's process tree's CPU time
    energy_uj: dict | None  # RAPL zone -> its counter, None without RAPL
    rss_mib: float | None = None  # the run's process tree's resident memory


def sockets(cpuinfo: Path = Path("/proc/cpuinfo")) -> int | None:
    """The node's CPU packages (distinct ``physical id``); None where the kernel does not say (some VMs)."""
    try:
        ids = {line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
               if line.startswith("physical id")}
    except OSError:
        return None
    return len(ids) or None


def cores_busy_seconds(cores: list[int]) -> float:
    every = psutil.cpu_times(percpu=True)
    return sum(times.user + times.nice + times.system + times.irq + times.softirq + times.steal
               for core, times in enumerate(every) if core in cores)


class Rapl:
    """The package and DRAM energy counters; ``error`` says why there are none."""

    def __init__(self, root: Path = POWERCAP):
        self.zones, self.ranges, self.error = {}, {}, None
        paths = sorted(root.glob("intel-rapl:*"))
        zones = [path for path in paths if path.name.count(":") == 1 or _name(path) == "dram"]
        if not zones:
            self.error = f"no RAPL counters on this machine ({root}/intel-rapl* absent)"
            return
        try:
            for zone in zones:
                label = f"{zone.name} {_name(zone)}"
                self.ranges[label] = int((zone / "max_energy_range_uj").read_text())
                int((zone / "energy_uj").read_text())  # readable? (root only since Linux 5.10)
                self.zones[label] = zone / "energy_uj"
        except OSError as error:
            self.zones, self.error = {}, f"RAPL counters cannot be read here ({error.filename}: {error.strerror})"

    def read(self) -> dict | None:
        return {label: int(path.read_text()) for label, path in self.zones.items()} if self.zones else None

    def joules(self, first: dict, last: dict) -> float:
        """Energy between two readings, each counter's wrap-around undone."""
        return sum((last[label] - first[label]) % (self.ranges[label] + 1) for label in first) / 1e6


def _name(zone: Path) -> str:
    try:
        return (zone / "name").read_text().strip()
    except OSError:
        return "?"


# The runner marks the window's end just after it reads the clock (dlbench.tasks.window_marks); the monitor's sample on
# that mark follows by the write and a wake-up: a sample this soon after the end still closes the window.
CLOSE_MARK_SLACK_S = 0.1


def within(samples: list[HostSample], window: tuple[float, float] | None) -> list[HostSample]:
    """The samples of the timed window: inside it, and the first after its end if it was taken on the end's mark."""
    if not window:
        return []
    inside = [s for s in samples if window[0] <= s.time <= window[1]]
    after = next((s for s in samples if s.time > window[1]), None)
    return inside + [after] if after and after.time - window[1] <= CLOSE_MARK_SLACK_S else inside


def contention_share(samples: list[HostSample], window, cores: int) -> tuple[float | None, str | None]:
    """Others' share of the held cores' capacity over the timed window, and why it is None if so."""
    inside = within(samples, window)
    if len(inside) < 2:
        return None, "fewer than 2 host samples inside the timed window"
    first, last = inside[0], inside[-1]
    others = (last.cores_busy_s - first.cores_busy_s) - (last.own_cpu_s - first.own_cpu_s)
    capacity = cores * (last.time - first.time)
    return max(0.0, others) / capacity, None


def cpu_energy(samples: list[HostSample], window, rapl: Rapl) -> tuple[float | None, str | None]:
    """Joules of the CPU packages and their DRAM over the timed window (counters' span, scaled to the window)."""
    if rapl.error:
        return None, rapl.error
    inside = within(samples, window)
    if len(inside) < 2:
        return None, "fewer than 2 host samples inside the timed window"
    span = inside[-1].time - inside[0].time
    return rapl.joules(inside[0].energy_uj, inside[-1].energy_uj) * (window[1] - window[0]) / span, None


# The kernel's count of OOM kills in a memory cgroup: cgroup v2's memory.events, v1's memory.oom_control
# (Linux 4.13 on); the process's own cgroup where it is mounted at its path, else the mount's root (a container's).
OOM_COUNTERS = (("memory.events", ""), ("memory.oom_control", "memory"))


def oom_kills(cgroups: Path = Path("/proc/self/cgroup"), mount: Path = Path("/sys/fs/cgroup")) -> int | None:
    """How many processes the OOM killer has ended in this process's memory cgroup; None where unknown."""
    try:
        lines = cgroups.read_text().splitlines()
    except OSError:
        return None
    own = {controllers: path.lstrip("/") for _, controllers, path in (line.split(":", 2) for line in lines)}
    for name, controller in OOM_COUNTERS:
        path = own.get(controller, "") if controller else own.get("", "")
        for directory in (mount / controller / path, mount / controller):
            try:
                counters = dict(line.split() for line in (directory / name).read_text().splitlines())
            except (OSError, ValueError):
                continue
            if "oom_kill" in counters:
                return int(counters["oom_kill"])
    return None
