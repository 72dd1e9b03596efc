"""What every worker shares: a framework release whose wheels need an older CPython than the workflow's (CNTK, the
thesis's MXNet) trains in a worker process under that interpreter, driven by the runner over a socket
(dlbench.backends.worker). Standard library only, written for Python 3.6 (tests check that with vermin).

The runner sends one command a line; the worker answers each with one JSON line, naming its rank::

    step                one training step on the next batch; {"done", "input_wait"} once it has finished
    fit N               N steps of the framework's own training loop (Keras's model.fit): {"step_end"} as each
                        step ends (time.perf_counter: Linux's CLOCK_MONOTONIC, the runner's clock too), then
                        {"done", "input_wait"}
    inference N         a resident batch of N images of the run's input; then "forward" runs one pass each
    test                the test split's logits and labels as .npy files beside the config (rank 0)
    profile start|stop  the framework's own profiler around the steps between
    loss                the last step's loss, and a fingerprint of the weights

The first reply says ready (with the trainable parameter count) or unavailable (with why). A worker object
(``make_worker(config, rank)``) has ``parameters``, ``loss`` and ``input_wait`` and the methods ``step``,
``prepare_inference``, ``forward``, ``evaluate``, ``weights_sum`` and ``finish``; and, where its framework has them,
``fit``, ``start_profiler`` and ``stop_profiler``.
"""
import importlib.util
import json
import os
import socket
import sys
import time

DLBENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dlbench")


class Unavailable(Exception):
    """The run cannot take place here; the runner records why."""


def dlbench_module(path):
    """One of dlbench's Python 3.6 modules, by its path in the package: the rest of dlbench needs a newer Python."""
    spec = importlib.util.spec_from_file_location(os.path.basename(path), os.path.join(DLBENCH, path + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launched_rank():
    """This worker's rank, as OpenMPI's (or another MPI's) launcher told it; 0 when started alone."""
    return int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))


def connect(address):
    """The runner's socket: ``tcp:HOST:PORT`` (ranks on other nodes), ``@NAME`` (Linux's abstract namespace)
    or a path."""
    if address.startswith("tcp:"):
        host, port = address[len("tcp:"):].rsplit(":", 1)
        return socket.create_connection((host, int(port)))
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect("\0" + address[1:] if address.startswith("@") else address)
    return connection


class InputClock:
    """A batch source that sums the seconds the steps wait on it (dlbench.backends.InputClock's worker side)."""

    def __init__(self, fetch):
        self.fetch, self.seconds = fetch, 0.0

    def __call__(self):
        started = time.perf_counter()
        try:
            return self.fetch()
        finally:
            self.seconds += time.perf_counter() - started


def store_evaluation(directory, logits, labels, classes):
    """The test split's logits and labels, each a list of batches' arrays, as .npy files in ``directory`` (the runner
    scores them as every framework's): their paths."""
    import numpy as np
    paths = {name: os.path.join(directory, f"test_{name}.npy") for name in ("logits", "labels")}
    np.save(paths["logits"], np.concatenate(logits) if logits else np.zeros((0, classes)))
    np.save(paths["labels"], np.concatenate(labels) if labels else np.zeros(0, np.int64))
    return paths


def serve(config_path, address, make_worker):
    rank = launched_rank()
    connection = connect(address)
    commands, replies = connection.makefile("r"), connection.makefile("w")
    directory = os.path.dirname(os.path.abspath(config_path))

    def reply(**message):
        replies.write(json.dumps(dict(message, rank=rank)) + "\n")
        replies.flush()

    with open(config_path) as stream:
        config = json.load(stream)
    try:
        worker = make_worker(config, rank)
    except Unavailable as error:
        reply(unavailable=str(error))
        return 0
    reply(ready=True, parameters=worker.parameters, pid=os.getpid(), host=socket.gethostname(),
          batch=config["batch_size"] // config.get("ranks", 1))
    for command in commands:  # until the runner closes the connection
        command = command.strip()
        if command in ("step", "forward"):
            getattr(worker, command)()
            reply(done=True, input_wait=worker.input_wait)
        elif command.startswith("fit "):
            worker.fit(int(command.split()[1]), lambda: reply(step_end=time.perf_counter()))
            reply(done=True, input_wait=worker.input_wait)
        elif command.startswith("inference "):
            worker.prepare_inference(int(command.split()[1]))
            reply(ready=True)
        elif command == "test":  # rank 0 evaluates: the ranks hold the same weights
            reply(**(worker.evaluate(directory) if rank == 0 else {}))
        elif command == "profile start":
            worker.start_profiler(directory)
            reply(ready=True)
        elif command == "profile stop":
            reply(**worker.stop_profiler())
        elif command == "loss":
            reply(loss=worker.loss, weights_sum=worker.weights_sum())
        else:
            raise ValueError(f"unknown command {command!r}")
    worker.finish()
    return 0


def main(argv, describe, make_worker, install=None):
    """``describe()``: the worker's Python, framework and package versions, and ``cuda_build``; ``install(prefix)``:
    what the environment needs beyond pip's install (CNTK's image reader's libraries)."""
    if argv == ["--describe"]:
        print(json.dumps(describe()))
        return 0
    if argv[:1] == ["--environment"]:  # a conda environment's status file: the runner uses the workflow's Python
        describe()
        if install:
            install()
        with open(argv[1], "w") as stream:
            json.dump({"status": "ok", "python": None, "worker_python": sys.executable,
                       "reason": ""}, stream)
        return 0
    config_path, address = argv
    dlbench_module("lifeline").watch()  # end with the run's monitor: mpiexec's ranks are out of the runner's reach
    return serve(config_path, address, make_worker)
