"""The monitor's sampler: a thread that reads a runner's process tree, its GPUs and the host's counters while the run
goes on (the record reduces its samples: :mod:`dlbench.record.build`)."""
from __future__ import annotations

import select
import threading
import time

import psutil

from ..hardware import host
from ..hardware.gpu import IDLE_SAMPLE_SECONDS, GpuProbe
from ..tasks import window_marks


class Sampler(threading.Thread):
    """Samples the runner's process tree (RSS, CPU time), its GPUs and the host's counters (its cores'
    busy time, RAPL energy: :mod:`dlbench.hardware.host`) until stopped: a GPU run at ``hz`` (NVML's power and memory),
    a run without GPUs :data:`HOST_HZ` times a second, and inside its timed window :data:`WINDOW_HOST_HZ`; and
    at once when the runner marks the window's opening and closing (``marks``: :mod:`dlbench.tasks.window_marks`).

    The sampler shares the machine with the run it measures and must stay out of its way. On a CPU run every
    core trains, and each wake-up of the sampler stops one of the framework's threads while the others wait for
    it at their next barrier: waking 20 times a second slowed PyTorch's LeNet by 1 to 4 % on this 2-core machine
    (steps timed while a sampler alternated a second on, a second off), for 0.3 % of a core's time. The host's
    counters are cumulative, so fewer samples lose nothing but the time course: the samples at the window's
    marks give its counters whole; the runner's RSS peak is the kernel's (VmHWM), which the next sample reads
    however short the peak was. Finding the tree's children scans all of /proc (about 1 ms here), so it is
    refreshed once a second; reading RSS of known processes costs microseconds.
    """

    TREE_REFRESH_S = 1.0
    HOST_HZ = 4.0
    WINDOW_HOST_HZ = 1.0  # between a CPU run's window marks: its bounds are sampled on the marks

    def __init__(self, pid: int, probe: GpuProbe, hz: float, cores: list[int], rapl: host.Rapl,
                 marks: window_marks.Listener | None = None):
        super().__init__(daemon=True)
        self.process, self.probe, self.marks = psutil.Process(pid), probe, marks
        gpu_run = probe.handles and not probe.idle
        self.interval = 1 / (hz if gpu_run else min(hz, self.HOST_HZ))
        self.window_interval = self.interval if gpu_run else max(self.interval, 1 / self.WINDOW_HOST_HZ)
        self.cores, self.rapl = cores, rapl
        self.rss_peak_mib, self.gpu_samples, self.host_samples, self.ticks = 0.0, [], [], 0
        self.first, self.last = None, None
        self._tree_cache, self._tree_time = [self.process], float("-inf")
        self._idle_gpus_read = float("-inf")
        self._stop_event = threading.Event()

    def _tree(self, now: float) -> list[psutil.Process]:
        if now - self._tree_time >= self.TREE_REFRESH_S:
            try:
                self._tree_cache = [self.process, *self.process.children(recursive=True)]
            except psutil.NoSuchProcess:
                self._tree_cache = []
            self._tree_time = now
        return self._tree_cache

    def run(self) -> None:
        in_window = False
        while not self._stop_event.is_set():
            self._sample(time.time())
            in_window = self._wait(self.window_interval if in_window else self.interval, in_window)

    def _sample(self, now: float) -> None:
        tree, rss, cpu = self._tree(now), 0, 0.0
        for proc in tree:
            try:
                rss += proc.memory_info().rss
                times = proc.cpu_times()
                cpu += times.user + times.system
            except psutil.Error:
                pass
        # the tree's sampled sum, or the runner's own peak where a sample missed it
        self.rss_peak_mib = max(self.rss_peak_mib, rss / 2**20, peak_rss_mib(self.process.pid))
        self.host_samples.append(host.HostSample(now, host.cores_busy_seconds(self.cores), cpu, self.rapl.read(),
                                                 rss / 2**20))
        # A CPU run's idle GPUs once a second, as the thesis read them: their draw barely moves, the run's cores do
        if self.probe.handles and (not self.probe.idle
                                   or now - self._idle_gpus_read >= IDLE_SAMPLE_SECONDS - self.interval / 2):
            self.gpu_samples.append(self.probe.sample(now, {p.pid for p in tree}))
            self._idle_gpus_read = now
        self.first, self.last, self.ticks = self.first or now, now, self.ticks + 1

    def _wait(self, seconds: float, in_window: bool) -> bool:
        """Until the next sample is due, a window mark comes or the sampler is stopped; whether the window is open."""
        if self.marks is None:
            self._stop_event.wait(seconds)
            return in_window
        readable, _, _ = select.select([self.marks.fd], [], [], seconds)
        marks = self.marks.read() if readable else b""
        last = max(marks.rfind(window_marks.OPEN), marks.rfind(window_marks.CLOSE))
        return in_window if last < 0 else marks[last:last + 1] == window_marks.OPEN

    def stop(self) -> None:
        self._stop_event.set()
        if self.marks:
            self.marks.wake()
        self.join()

    @property
    def achieved_hz(self) -> float | None:
        span = (self.last or 0) - (self.first or 0)
        return (self.ticks - 1) / span if span > 0 else None


def peak_rss_mib(pid: int) -> float:
    """The process's resident-set high-water mark (the kernel's VmHWM, Linux); 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return 0.0
