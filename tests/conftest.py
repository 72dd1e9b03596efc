import contextlib
import copy
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest
import yaml
from dlbench import paths

ROOT = Path(__file__).resolve().parent.parent


def validated(config: dict) -> dict:
    """A copy of ``config`` as the workflow sees it: validated against the config schema, its defaults filled in."""
    from snakemake.utils import validate

    config = copy.deepcopy(config)
    validate(config, str(ROOT / "config" / "schema.yaml"))
    return config
# Scripts a test runs with a framework's interpreter (and CNTK's stand-in package)
IN_FRAMEWORK = ROOT / "tests" / "in_framework"
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))


# The fake GPU node (pytest --fake-gpu-node): one H100 on driver 580 in its nvidia-smi and NVML, and torch reporting
# a CUDA build, for every process of the session (tests/fake_gpu_node)
FAKE_GPU_NODE = ROOT / "tests" / "fake_gpu_node"
HOOKS = ROOT / "tests" / "hooks"  # what the tests' sitecustomize files change in a run's own process
# The test being set up and run (pytest_runtest_setup), which framework_environment holds to its needs_env marker
CURRENT_TEST: list[pytest.Item] = []


def pytest_addoption(parser):
    parser.addoption("--fake-gpu-node", action="store_true",
                     help="run the tests on a fake GPU node: nvidia-smi and NVML list one H100 on driver 580, torch "
                          "reports a CUDA build (tests/fake_gpu_node)")


def pytest_configure(config):
    if not config.getoption("--fake-gpu-node"):
        return
    python = [str(FAKE_GPU_NODE / "python"), str(HOOKS)]
    os.environ["PATH"] = os.pathsep.join([str(FAKE_GPU_NODE / "bin"), os.environ["PATH"]])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [*python, os.environ.get("PYTHONPATH")]))
    sys.path[:0] = python
    sys.modules.pop("pynvml", None)  # the fake's, from now on
    import fake_node

    fake_node.report_cuda_build()


def pytest_collection_modifyitems(config, items):
    """needs_env on the tests that use an environment's fixture; needs_gpu and needs_no_gpu tests skipped, saying
    why, on a node that is not what they need."""
    from dlbench.envs import node_gpus

    fake, gpus = config.getoption("--fake-gpu-node"), node_gpus()
    for item in items:
        if ENVIRONMENT_FIXTURES & set(item.fixturenames):
            item.add_marker("needs_env")
        if item.get_closest_marker("needs_gpu") and (fake or not gpus):
            item.add_marker(pytest.mark.skip(reason="needs a GPU: " + (
                "the fake GPU node's GPU runs no code" if fake else "nvidia-smi lists none on this node")))
        if item.get_closest_marker("needs_no_gpu") and gpus:
            item.add_marker(pytest.mark.skip(reason=f"needs a node without GPUs: nvidia-smi lists {len(gpus)}"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    CURRENT_TEST[:] = [item]


# Test files that start the same services (a Slurm cluster's daemons, /etc/slurm's config, the two nodes' network
# namespaces): one pytest-xdist worker runs them, one after another
ONE_WORKER = {"tests/workflow/test_slurm.py": "slurm", "tests/workflow/test_slurm_nodes.py": "slurm"}

if importlib.util.find_spec("xdist"):
    def pytest_xdist_make_scheduler(config, log):
        """make test's two pytest-xdist workers (--dist loadfile): each test file goes whole to one worker, so that a
        module's fixture (a workflow run many tests read) runs once, and :data:`ONE_WORKER`'s files to the same
        one."""
        if config.getvalue("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadFileScheduling

        class Scheduling(LoadFileScheduling):
            def _split_scope(self, nodeid: str) -> str:
                file = super()._split_scope(nodeid)
                return ONE_WORKER.get(file, file)

        return Scheduling(config, log)


@pytest.fixture(scope="session", autouse=True)
def own_temporary_directory():
    """This session's temporary files (its runs' scratch directories too: TMPDIR reaches them) in a directory of
    its own, so that two test sessions on one machine (a user's beside CI's) never take each other's
    directories for leftovers (:func:`nothing_of_the_run_outlives_the_test` removes those). Not named
    ``dlbench-*``: an older session's check would take it for one of its runs'. Mode 0755: the slots tests'
    other user enters a shared directory inside it."""
    directory = Path(tempfile.mkdtemp(prefix="pytest-dlbench-"))
    directory.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(directory))
        patch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
        yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def private_slot_locks(own_temporary_directory, tmp_path_factory):
    """Runs under test (the workflow's too, which inherit the variable) lock their devices in a
    directory of the test session's, so that no lock directory outlives the tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLBENCH_SLOTS_DIR", str(tmp_path_factory.mktemp("slots")))
        yield


# Every process a test starts inherits this variable, naming the test (Slurm's job steps too: srun and sbatch pass
# the submitter's environment on). A test owns only the processes that carry its own value: a workflow or a Slurm
# running beside the tests on this machine is never taken for a leftover, never killed.
OWNER_VARIABLE = "DLBENCH_TEST_OWNER"
# What a run starts: the monitor and runner (dlbench), CNTK's worker and its MPI, torchrun, Snakemake
RUN_PROCESS_WORDS = ("dlbench", "cntk_worker", "mpiexec", "orted", "torch.distributed.run", "snakemake")


def processes_of_this_test(*words: str) -> list[psutil.Process]:
    """The live processes that this test started (its :data:`OWNER_VARIABLE` in their environment) whose command
    line has one of ``words``; this process itself excluded."""
    owner = os.environ[OWNER_VARIABLE]
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if process.info["pid"] == os.getpid() or not process.info["cmdline"]:
            continue
        command = " ".join(process.info["cmdline"])
        if not any(word in command for word in words):
            continue
        with contextlib.suppress(psutil.Error):  # gone, or another user's (its environment unreadable)
            if process.environ().get(OWNER_VARIABLE) == owner and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


@pytest.fixture(autouse=True)
def nothing_of_the_run_outlives_the_test(request):
    """After each test, no process it started for a run is alive and no dlbench-* temporary directory it
    made is left (issue 30: CNTK's workers and scratch directories outlived their tests). Leftovers fail the
    test and are then removed."""
    temporary = Path(tempfile.gettempdir())
    directories = set(temporary.glob("dlbench-*"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(OWNER_VARIABLE, f"{os.getpid()}:{request.node.nodeid}")
        yield
        _, alive = psutil.wait_procs(processes_of_this_test(*RUN_PROCESS_WORDS), timeout=10)  # being reaped
        commands = []
        for process in alive:
            with contextlib.suppress(psutil.Error):
                commands.append(" ".join(process.cmdline()))
                process.kill()
    left = sorted(set(temporary.glob("dlbench-*")) - directories)
    for path in left:
        shutil.rmtree(path, ignore_errors=True)
    assert not commands and not left, f"left by the test: processes {commands}, directories {left}"


@pytest.fixture(scope="session")
def record_schema():
    return yaml.safe_load((ROOT / "workflow" / "schemas" / "run_record.schema.yaml").read_text())


@pytest.fixture(scope="session")
def config_schema_path():
    return ROOT / "config" / "schema.yaml"


@pytest.fixture(scope="session", autouse=True)
def shared_environments():
    """Framework environments built once per machine and shared by this session's tests and the workflows they
    run (their framework_venv jobs inherit the variable), as make shares them with the user's workflow:
    ``$DLBENCH_VENV_ROOT`` where set, else the user's cache."""
    from dlbench.envs import SHARED_ROOT_VARIABLE, caffe_build

    root = os.environ.get(SHARED_ROOT_VARIABLE) or str(caffe_build.cache_root().parent / "venvs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SHARED_ROOT_VARIABLE, root)
        yield Path(root)


def framework_environment(framework: str) -> dict:
    """The framework's environment as the workflow's framework_venv job builds it (:func:`shared_environments`),
    built here if missing; once a session. Its build log: .venvs/<framework>-tests.log. Only for a test marked
    ``needs_env`` (a fixture of :data:`ENVIRONMENT_FIXTURES` marks its tests), which ``-m "not needs_env"``
    leaves out on a machine where nothing is built yet."""
    assert CURRENT_TEST and CURRENT_TEST[-1].get_closest_marker("needs_env"), (
        f"{CURRENT_TEST[-1].nodeid if CURRENT_TEST else 'a fixture'} builds the {framework} environment: mark it "
        f"needs_env")
    return _built_environment(framework)


@functools.cache
def _built_environment(framework: str) -> dict:
    from dlbench.envs import build_environment, shared_root

    logs = ROOT / ".venvs"
    logs.mkdir(exist_ok=True)
    # On the fake GPU node the CPU build, whose code runs here: the node's own choice (the CUDA build nvidia-smi's
    # H100 asks for) is tested in tests/unit/envs, and its GPU runs no code. On any other node, the node's choice,
    # which the user's workflow shares.
    gpus = [] if CURRENT_TEST[-1].config.getoption("--fake-gpu-node") else None
    with open(logs / f"{framework}-tests.log", "w") as log:
        status = build_environment(ROOT / "envs" / f"{framework}.requirements.txt", logs / framework, os.cpu_count(),
                                   log, gpus=gpus, shared_root=shared_root())
    assert status["status"] == "ok", status["reason"]  # PyPI reaches this machine: fail, never skip
    return status


# Fixtures that build a framework's environment: the tests that use them, directly or through another fixture, are
# marked needs_env (pytest_collection_modifyitems)
ENVIRONMENT_FIXTURES = {"mxnet_python", "tensorflow_python", "caffe_python", "cntk_worker_python",
                        "mxnet_1_2_worker_python", "mxnet_1_4_worker_python", "mxnet_1_6_worker_python",
                        "tensorflow_1_9_worker_python", "pytorch_1_0_worker_python", "jax_python",
                        "tensorflow_2_16_python", "tensorflow_2_18_python"}


def _framework_python(framework: str) -> str:
    return framework_environment(framework)["python"]


@pytest.fixture(scope="session")
def mxnet_python():
    return _framework_python("mxnet")


@pytest.fixture(scope="session")
def tensorflow_python():
    return _framework_python("tensorflow")


@pytest.fixture(scope="session")
def tensorflow_2_16_python():
    """TensorFlow 2.16.2, a release between the thesis's and today's, with today's Keras, on the workflow's CPython."""
    return _framework_python("tensorflow-2.16")


@pytest.fixture(scope="session")
def tensorflow_2_18_python():
    """TensorFlow 2.18.1, the same."""
    return _framework_python("tensorflow-2.18")


@pytest.fixture(scope="session")
def caffe_python():
    return _framework_python("caffe")  # the first time, Caffe is compiled from source (about 4 minutes)


@pytest.fixture(scope="session")
def cntk_worker_python():
    """CNTK's own CPython 3.6 (pyenv's on this project's machines), with CNTK 2.7 in its venv."""
    return framework_environment("cntk")["worker_python"]


@pytest.fixture(scope="session")
def mxnet_1_2_worker_python():
    """The thesis's MXNet 1.2.0 in a venv on CPython 3.6 (pyenv's on this project's machines)."""
    return framework_environment("mxnet-1.2")["worker_python"]


@pytest.fixture(scope="session")
def mxnet_1_4_worker_python():
    """MXNet 1.4.1, a release between the thesis's and today's, in a venv on CPython 3.6."""
    return framework_environment("mxnet-1.4")["worker_python"]


@pytest.fixture(scope="session")
def mxnet_1_6_worker_python():
    """MXNet 1.6.0, a release between the thesis's and today's, in a venv on CPython 3.6."""
    return framework_environment("mxnet-1.6")["worker_python"]


@pytest.fixture(scope="session")
def tensorflow_1_9_worker_python():
    """The thesis's TensorFlow 1.9.0 in a venv on CPython 3.6 (pyenv's on this project's machines)."""
    return framework_environment("tensorflow-1.9")["worker_python"]


@pytest.fixture(scope="session")
def pytorch_1_0_worker_python():
    """PyPI's oldest PyTorch, 1.0.0 (the thesis's was 0.4), in a venv on CPython 3.6 (pyenv's on this project's
    machines)."""
    return framework_environment("pytorch-1.0")["worker_python"]


@pytest.fixture(scope="session")
def jax_python():
    return _framework_python("jax")


def svg_text(path: Path) -> str:
    """The words a figure shows: matplotlib draws text as glyph paths, each text preceded by a comment of its words;
    those, their lines joined by spaces (a note wrapped over lines reads as one)."""
    return " ".join(" ".join(words.split()) for words in re.findall(r"<!-- (.*?) -->", path.read_text(), re.DOTALL))


def run_in(python: str, script: str, *args) -> dict:
    """Run tests/in_framework/<script> with a framework's interpreter; its last output line is JSON."""
    env = paths.with_package({**os.environ, "OMP_NUM_THREADS": "2"})
    completed = subprocess.run([python, str(IN_FRAMEWORK / script), *map(str, args)],
                               check=False, capture_output=True, text=True, env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs (as root), unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)
