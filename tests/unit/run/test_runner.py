"""The training loop's clock, against a simulated asynchronous device whose steps stamp when they were dispatched
and finished: the loop's intervals are checked by the order and containment of those stamps, never by how long a
step took, which a busy machine stretches (what must be timed is make bench's)."""
import time
from concurrent.futures import ThreadPoolExecutor

from dlbench.backends import InputClock
from dlbench.tasks.loop import Stamped, already_finished, timed_loop

DEVICE_SECONDS, DISPATCH_SECONDS = 0.02, 0.01


class AsynchronousDevice:
    """Steps queue on one worker, like kernels on a CUDA stream; dispatching one costs host time."""

    def __init__(self):
        self.queue = ThreadPoolExecutor(max_workers=1)
        self.pending = []
        self.finished_at = []  # time.time(), beside the timed window's epochs
        self.dispatched, self.finished = [], []  # time.perf_counter(), the loop's clock

    def _run(self):
        time.sleep(DEVICE_SECONDS)
        self.finished_at.append(time.time())
        self.finished.append(time.perf_counter())

    def step(self):
        self.dispatched.append(time.perf_counter())
        time.sleep(DISPATCH_SECONDS)
        self.pending.append(self.queue.submit(self._run))
        return self.pending[-1].result

    def synchronize(self):
        for future in self.pending:
            future.result()

    def input_wait_seconds(self):
        return None  # its steps take their batches where the loop cannot see


def test_the_device_computes_while_python_dispatches_the_next_step():
    device = AsynchronousDevice()
    start = time.perf_counter()
    timing = timed_loop(device, iterations=30, warmup=5, progress=lambda *a, **k: None)
    wall = time.perf_counter() - start
    times = timing["iteration_seconds"]
    assert len(times) == 30 and len(device.finished_at) == 30
    # A loop that waited for each step before dispatching the next would dispatch none before the one before it had
    # finished; this one waits only at its progress lines (every third step here)
    overlapped = sum(device.dispatched[k + 1] < device.finished[k] for k in range(29))
    assert overlapped >= 29 - 10, overlapped
    # nothing between the steps escapes the clock: its intervals hold the first dispatch to the last finish
    assert device.finished[-1] - device.dispatched[0] <= sum(times) <= wall


def test_the_timed_window_holds_exactly_the_timed_steps():
    device = AsynchronousDevice()
    timing = timed_loop(device, iterations=20, warmup=5, progress=lambda *a, **k: None)
    window = timing["timed_window"]
    assert window["start_epoch"] >= device.finished_at[4]  # the last warm-up step had finished
    assert window["start_epoch"] < device.finished_at[5]
    assert window["end_epoch"] >= device.finished_at[-1]
    assert abs(window["seconds"] - sum(timing["iteration_seconds"][5:])) < 1e-9
    # from the last warm-up step's finish to the last step's, which the device ran one after another
    assert 15 * DEVICE_SECONDS <= window["seconds"] <= window["end_epoch"] - device.finished_at[4]


def test_without_warm_up_the_window_opens_before_the_first_step():
    device = AsynchronousDevice()
    timing = timed_loop(device, iterations=3, warmup=0, progress=lambda *a, **k: None)
    assert timing["timed_window"]["start_epoch"] < device.finished_at[0]
    assert timing["timed_window"]["seconds"] == sum(timing["iteration_seconds"])


class StampingDevice(AsynchronousDevice):
    """Stamps each step's completion on its worker, as MXNet's engine does; counts the waits that blocked."""

    def __init__(self):
        super().__init__()
        self.stamps, self.blocking_waits = [], 0

    def _run(self):
        super()._run()
        self.stamps.append(time.perf_counter())
        return self.stamps[-1]

    def step(self):
        self.dispatched.append(time.perf_counter())
        time.sleep(DISPATCH_SECONDS)
        future = self.queue.submit(self._run)
        self.pending.append(future)
        device = self

        class Stamp(Stamped):
            COMPLETION = "the simulated engine's stamp"

            def __call__(self):
                device.blocking_waits += not future.done()
                return future.result()
        return Stamp()


def test_stamped_steps_are_clocked_by_their_stamps_and_waited_for_only_at_the_progress_lines():
    device, lines = StampingDevice(), []
    start = time.perf_counter()
    timing = timed_loop(device, iterations=40, warmup=5, progress=lambda line, **_: lines.append(line))
    wall = time.perf_counter() - start
    times, stamps = timing["iteration_seconds"], device.stamps
    assert len(times) == len(stamps) == 40 and len(lines) == 10
    assert all(abs(times[index] - (stamps[index] - stamps[index - 1])) < 1e-9 for index in range(1, 40))
    # one wait at each line, at the warm-up's end and at the loop's: a wait for each step would block 40 times
    assert device.blocking_waits <= 12
    # the steps' intervals, up to the last one's stamp, are the loop's time: they start between the test's start and
    # the first dispatch
    assert start <= stamps[-1] - sum(times) <= device.dispatched[0] and sum(times) <= wall
    window = timing["timed_window"]
    assert abs(window["seconds"] - (stamps[-1] - stamps[4])) < 1e-9


class ReplyingWorker:
    """Steps in a worker process that sends a reply per step, as CNTK's does: a wait reads the oldest reply, and
    synchronize reads all that are due, so a wait after it would block for a reply that never comes."""

    def __init__(self):
        self.replies = 0

    def step(self):
        self.replies += 1
        return self.read_reply

    def read_reply(self):
        assert self.replies, "no reply will come: the loop waited for a step after synchronize()"
        self.replies -= 1

    def synchronize(self):
        while self.replies:
            self.read_reply()

    def input_wait_seconds(self):
        return None


def test_after_synchronize_no_step_is_waited_for_again():
    timing = timed_loop(ReplyingWorker(), iterations=6, warmup=2, progress=lambda *a, **k: None)
    assert len(timing["iteration_seconds"]) == 6


class SynchronousDevice:
    """Steps that have finished when step() returns, as on a CPU; step 7 takes four times as long.

    Each step's real start and end are recorded: a loaded machine oversleeps and preempts, and the
    clock under test must match what happened, not what was asked for."""

    def __init__(self):
        self.durations = [0.04 if index == 7 else 0.01 for index in range(20)]
        self.started_at, self.finished_at = [], []  # time.time(), as the timed window's epochs
        self.began, self.ended = [], []  # time.perf_counter(), as the loop's clock
        self.fetched, self.computed = [], []  # each step's seconds on its batch and on its sleep
        self.next_batch = InputClock(self.fetch)

    def fetch(self):
        began = time.perf_counter()
        time.sleep(0.005 if len(self.finished_at) >= 10 else 0.001)
        self.fetched.append(time.perf_counter() - began)

    def input_wait_seconds(self):
        return self.next_batch.seconds

    def step(self):
        self.started_at.append(time.time())
        self.began.append(time.perf_counter())
        self.next_batch()
        computing = time.perf_counter()
        time.sleep(self.durations[len(self.finished_at)])
        self.ended.append(time.perf_counter())
        self.computed.append(self.ended[-1] - computing)
        self.finished_at.append(time.time())
        return already_finished

    def synchronize(self):
        pass


def test_a_step_that_finished_when_it_returned_is_clocked_at_once():
    """Step i's interval holds all of step i and none of step i + 1: the loop reads its clock after
    step i returned and before step i + 1 began. Clocked one step late, step 7's long sleep would
    fall in step 8's interval and step 7's would be too short."""
    device = SynchronousDevice()
    timing = timed_loop(device, iterations=20, warmup=5, progress=lambda *a, **k: None)
    returned = time.perf_counter()
    times = timing["iteration_seconds"]
    device.began.append(returned)  # no step 20: the loop's last reading comes before it returned
    for index in range(1, 20):
        assert device.ended[index] - device.began[index] <= times[index], index
        assert times[index] <= device.began[index + 1] - device.ended[index - 1], index
    assert times[7] >= 0.04
    window = timing["timed_window"]
    assert device.finished_at[4] <= window["start_epoch"] <= device.started_at[5]  # before step 5 ran
    assert device.ended[19] - device.began[5] <= window["seconds"] <= returned - device.ended[4]


def test_the_input_wait_of_the_timed_steps_is_what_their_batches_took():
    device = SynchronousDevice()
    timing = timed_loop(device, iterations=20, warmup=5, progress=lambda *a, **k: None)
    waited = timing["timed_window"]["input_wait_seconds"]
    outside_the_sleeps = [end - start - computed for start, end, computed in
                          zip(device.began, device.ended, device.computed)]
    assert sum(device.fetched[5:]) <= waited <= sum(outside_the_sleeps[5:])  # steps 5-19, not the warm-up
    assert waited < timing["timed_window"]["seconds"]
    assert timed_loop(AsynchronousDevice(), 3, 1, progress=lambda *a, **k: None)["timed_window"][
        "input_wait_seconds"] is None
