"""The child process of a run: build the network, train (or infer), time every iteration.

Started by :mod:`dlbench.run.monitor` with the framework environment's interpreter::

    python -m dlbench.run.runner SPEC.json RESULT.json

It imports the standard library, numpy (through :mod:`dlbench.datasets`; every framework's environment
has it) and its framework. The result file carries what only the training process can know:
per-iteration times (each read as a step finishes, an asynchronous step's successor already
dispatched), the timed window in wall-clock time (so the monitor can cut its GPU samples to it), the
process CPU time over that window, the final loss, the framework's own memory peak, and how long the
set-up before the first step took (import, build).
"""
from __future__ import annotations

import contextlib
import sys
import time
import traceback
from pathlib import Path

from .. import backends, files, formats, lifeline, tasks
from ..datasets import description
from ..spec import RunSpec

RESULT_UNWRITTEN = 3  # the exit status when the result file could not be written (a full disk)


def _quiet(*args, **kwargs) -> None:
    pass


def run(spec: RunSpec) -> dict:
    backends.require_numerics(spec)
    backends.require_task(spec)
    started = time.perf_counter()
    backend = backends.load(spec.framework)
    result = backends.describe(backend)
    imported = time.perf_counter()
    backends.require_cuda_build(spec, result)
    if spec.gpus:  # a GPU the build has no code for is unavailable here, not an error in the timed loop
        result["gpu_code"] = backends.check_gpu_code(backend.gpu_code())
    described = description(spec.network, spec.family, spec.input_size, spec.classes)
    with backends.closing(backend.Harness(spec, described)) as harness:
        result.update(import_seconds=imported - started, build_seconds=time.perf_counter() - imported)
        progress = print if tasks.first_process() else _quiet
        progress(f"{spec.framework} {result['framework_version']}: {spec.task} {spec.network} on {spec.dataset}, "
                 f"{spec.device}, {spec.variant}, batch {spec.batch_size_global}, {spec.iterations} iterations "
                 f"({spec.warmup_iterations} warm-up), {spec.threads} threads", flush=True)
        result.update(tasks.load(spec.task).run(harness, spec, progress))
        result["framework_allocator_peak_mib"] = harness.allocator_peak_mib()
        result["data_parallel"] = getattr(harness, "data_parallel", None)
    return result


def _damage_behind(spec: RunSpec) -> str:
    """Where a run on stored data failed, what of its data no longer matches its conversion, by every file's
    checksum whatever its size and date, and how to convert it again; empty where all matches. A reader's own error
    names no shard (TensorFlow's ``DataLossError: corrupted record at 142153``)."""
    if not spec.data_dir:
        return ""
    try:
        formats.check(Path(spec.data_dir), every_file=True)
    except formats.DamagedShard as damaged:
        return f"; {damaged}"
    return ""


def _error_name(error: BaseException) -> str:
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def main(argv: list[str]) -> int:
    entered_epoch = time.time()  # the monitor's clock from its launch to here: the interpreter's start
    lifeline.watch()  # before anything slow: a monitor killed meanwhile ends this run at once
    spec_path, result_path = map(Path, argv)
    spec = RunSpec.load(spec_path)
    try:
        result = {"status": "ok", "reason": "", "entered_epoch": entered_epoch, **run(spec)}
        code = 0
    except backends.Unavailable as error:
        result, code = {"status": "unavailable", "reason": str(error)}, 0
    except Exception as error:  # noqa: BLE001 - any failure becomes the record's reason
        with contextlib.suppress(OSError):  # the log's disk may be the full one
            traceback.print_exc()
        result, code = {"status": "failed", "reason": f"{_error_name(error)}: {error}{_damage_behind(spec)}"}, 1
    if tasks.first_process():
        try:
            files.write_json(result_path, result)
        except OSError as error:  # a full disk: the monitor finds no result and says why
            with contextlib.suppress(OSError):
                print(f"the result could not be written: {error}", file=sys.stderr)
            return RESULT_UNWRITTEN
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
