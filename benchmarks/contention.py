"""The contention mark against a known neighbour: a one-thread PyTorch run on one core, alone and beside a busy loop
pinned to that core, in alternating rounds. The busy loop takes about half the core from an otherwise idle machine, so
the run's contention_share (dlbench.hardware.host: the others' busy time of its held cores over its window) must come
out above the mark (metrics.FLAGS["contended"], 0.10); alone it must come out under it. A machine with other work on
every core has no "alone" to measure: that quantity's rounds then say so in their spread and goal.

It pins a process to a real core, which would disturb a timed run beside it: it is make bench's, never make test's.

    .venv/bin/python benchmarks/contention.py [--rounds 3] [--iterations 200]
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from dlbench import metrics
from dlbench.checks import bench
from dlbench.run import monitor
from dlbench.spec import RunSpec


def share_of_one_run(scratch: Path, iterations: int, busy_core: int | None) -> float | None:
    """The contention share of one run on this process's first core, with a busy loop pinned there or not."""
    spec = RunSpec(framework="pytorch", dataset="mnist-synthetic", network="lenet", device="cpu", repetition=1,
                   batch_size_global=32, iterations=iterations, warmup_iterations=10, learning_rate=0.01, threads=1)
    busy = None
    if busy_core is not None:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        os.sched_setaffinity(busy.pid, {busy_core})
    try:
        record = monitor.run(spec, sys.executable, scratch / "run.log", 600, 20, "bench", lock_dir=scratch / "locks")
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    if record["status"] != "ok":
        raise SystemExit(f"the run failed: {record['reason']}")
    if record["provenance"]["cores_held"] != [min(os.sched_getaffinity(0))]:
        raise SystemExit(f"the run held cores {record['provenance']['cores_held']}, not the busy loop's")
    return record["timing"]["contention_share"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=200,
                        help="long enough for the host's samples to span the timed window on a loaded machine")
    args = parser.parse_args()
    core, mark = min(os.sched_getaffinity(0)), metrics.FLAGS["contended"].above
    alone, beside = [], []
    with tempfile.TemporaryDirectory(prefix="bench-contention-") as scratch:
        for number in range(args.rounds):
            for shares, busy_core in ((alone, None), (beside, core)):
                (Path(scratch) / "locks").mkdir(exist_ok=True)
                share = share_of_one_run(Path(scratch), args.iterations, busy_core)
                shares.append(share)
                print(f"round {number + 1}: {'a busy loop on its core' if busy_core is not None else 'alone'}: "
                      f"contention share {share}", file=sys.stderr, flush=True)
    case = f"lenet mnist-synthetic batch 32 cpu threads 1 core {core}"
    measured = [bench.Measurement("contention", quantity, "pytorch", case, [s for s in shares if s is not None],
                                  goal=goal, contention_shares=shares, share=True)
                for quantity, goal, shares in (("contention share, alone on its core", f"<= {mark}", alone),
                                               ("contention share, a busy loop on its core", f">= {mark}", beside))]
    if not all(measurement.values for measurement in measured):
        raise SystemExit("no run had 2 host samples inside its timed window: raise --iterations")
    bench.emit(measured)


if __name__ == "__main__":
    main()
