"""CNTK 2.7, whose wheels are cp36 only, in the virtualenv the workflow builds on pyenv's CPython 3.6 (this project's
machines have one): the real CNTK builds every network with its parameter count, trains, reads its map files, scores
a test split and trains over two MPI ranks. Without it: the translation into CNTK layer calls, the worker's Python 3.6
syntax and the "unavailable" reasons; and the runner's protocol with its worker and its failure paths against
tests/in_framework/cntk_standin, a stand-in whose steps take a set time and whose worker can be made to die."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dlbench import datasets, envs, formats, networks
from dlbench.backends import cntk as cntk_backend
from dlbench.run import runner
from dlbench.spec import RunSpec

from ...conftest import IN_FRAMEWORK, ROOT, framework_environment

STANDIN = IN_FRAMEWORK / "cntk_standin"
CASES = [(name, sized_for) for name, sizings in networks.SIZINGS.items() for sized_for in sizings]


def _convs(node):
    if node["op"] == "conv":
        yield node
    for key in ("children", "branches"):
        for child in node.get(key, []):
            yield from _convs(child)
    for key in ("body", "shortcut"):
        if node.get(key):
            yield from _convs(node[key])


def test_padding_is_cntk_automatic_where_it_centres_the_kernel_and_explicit_elsewhere():
    alexnet = list(_convs(cntk_backend.plan(networks.network("alexnet", "imagenet"))))
    # 11x11/4 with padding 2: CNTK's automatic padding would give 56 outputs on 224, torchvision's 55.
    assert alexnet[0] == {"op": "conv", "filters": 64, "kernel": 11, "stride": 4, "pad": False,
                          "explicit_pad": 2, "bias": True, "name": "conv1"}
    assert all(conv["pad"] and not conv["explicit_pad"] for conv in alexnet[1:])
    stem = next(_convs(cntk_backend.plan(networks.network("resnet50", "imagenet"))))
    assert (stem["kernel"], stem["stride"], stem["pad"], stem["explicit_pad"]) == (7, 2, True, 0)


def test_a_window_cntk_cannot_express_is_refused():
    with pytest.raises(ValueError, match="no CNTK padding mode"):
        cntk_backend.CntkPlanner().maxpool(networks.MaxPool(3, 2, padding=2), (8, 10, 10))
    with pytest.raises(ValueError, match="CNTK gives"):
        cntk_backend._check_size(networks.Conv(64, 11, 4, 2), (3, 224, 224), autopad=True)  # 56, not 55


def _spec(**changes):
    fields = {"framework": "cntk", "dataset": "mnist-synthetic", "network": "lenet", "device": "cpu",
              "repetition": 1, "batch_size_global": 16, "iterations": 12, "warmup_iterations": 2,
              "learning_rate": 0.01, "threads": 2}
    return RunSpec(**{**fields, **changes})


@pytest.fixture
def standin_worker(monkeypatch):
    """The runner's worker interpreter is this Python, whose ``cntk`` is the stand-in."""
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, sys.executable)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(STANDIN), os.environ.get("PYTHONPATH", "")]))


def _run(spec: RunSpec, tmp_path: Path) -> dict:
    spec.dump(tmp_path / "spec.json")
    runner.main([str(tmp_path / "spec.json"), str(tmp_path / "result.json")])
    return json.loads((tmp_path / "result.json").read_text())


def test_the_runner_times_the_worker_steps_on_synthetic_data(tmp_path, standin_worker):
    result = _run(_spec(), tmp_path)
    assert result["status"] == "ok", result["reason"]
    assert result["framework_version"] == "2.7-standin" and result["packages"]["cntk"] == "2.7-standin"
    # The stand-in's steps sleep 2 ms each, one after another: the intervals, which run from one observed
    # completion to the next, add up to at least that (one alone may not, when a reply is read late).
    assert len(result["iteration_seconds"]) == 12 and sum(result["iteration_seconds"]) >= 12 * 0.002
    assert result["final_loss"] == pytest.approx(2.3 / 12)


def test_the_worker_is_given_the_format_directory_s_map_files_and_scales_in_bgr_order(tmp_path):
    data = cntk_format(tmp_path, "cifar10", 40, 10)
    spec = _spec(dataset="cifar10-generated", network="alexnet", data_dir=str(data))
    config = cntk_backend.worker_config(spec, networks.network("alexnet", "cifar10"), tmp_path)
    assert config["map_file"] == str(data / "train_map.txt") and config["test_map_file"] == str(data / "test_map.txt")
    assert config["input_scale"][0] == pytest.approx(1 / (255 * datasets.FAMILIES["cifar10"].std[2]))  # BGR


@pytest.mark.parametrize(("device", "loader_workers", "multithreaded"), [("cpu", 0, False), ("gpu1", 4, True)])
def test_the_reader_decodes_on_one_thread_where_the_run_s_cores_all_train(tmp_path, device, loader_workers,
                                                                          multithreaded):
    """CNTK's image reader decodes on several threads by default; on a CPU run, whose cores train (no loader
    workers), those took the step's cores and made its spikes (CHANGELOG 0.48.0)."""
    spec = _spec(dataset="mnist-generated", device=device, loader_workers=loader_workers,
                 data_dir=str(cntk_format(tmp_path, "mnist", 16, 4)))
    config = cntk_backend.worker_config(spec, networks.network("lenet", "mnist"), tmp_path)
    assert config["multithreaded_reader"] is multithreaded


def cntk_format(tmp_path: Path, family: str, train_images: int, test_images: int) -> Path:
    datasets.generate(family, tmp_path / "raw", train_images=train_images, test_images=test_images, seed=3)
    datasets.unpack(family, tmp_path / "raw", tmp_path / "data")
    formats.convert("cntk", family, tmp_path / "data", tmp_path / "cntk", seed=7, log=lambda line: None)
    return tmp_path / "cntk"


def test_an_accuracy_run_scores_the_worker_s_logits_of_every_test_image(tmp_path, standin_worker):
    """The worker evaluates the test map file once per epoch, in its order: the stand-in predicts class 0 for
    every image, so its accuracy is the share of the test split's images labelled 0."""
    data = cntk_format(tmp_path, "cifar10", 40, 10)
    spec = _spec(dataset="cifar10-generated", network="alexnet", data_dir=str(data), task="accuracy",
                 iterations=2 * (40 // 16), warmup_iterations=0, epochs=2, target_accuracy=0.0)
    result = _run(spec, tmp_path)
    assert result["status"] == "ok", result["reason"]
    labels = [int(line.split("\t")[1]) for line in (data / "test_map.txt").read_text().splitlines()]
    assert [epoch["test_images"] for epoch in result["epochs"]] == [10, 10]
    assert result["epochs"][0]["test_accuracy"] == pytest.approx(labels.count(0) / 10)


def test_cntk_s_profiler_log_is_summed_by_layer_per_step():
    """A real detail log (cntk_profile_detail.json says how it was recorded): conv1's forward is its
    Convolution node's and its bias's Plus node's events (506 + 270 us in the first step); the parameters', the
    input's and the loss's nodes count for no layer, so the layers account for less than the step."""
    recorded = json.loads((Path(__file__).parent / "cntk_profile_detail.json").read_text())
    steps = cntk_backend.layer_steps(recorded["events"], recorded["layers"])
    assert len(steps) == 2 and list(steps[0]) == networks.layer_names(networks.network("lenet", "mnist"))
    assert steps[0]["conv1"] == pytest.approx((776e-6, 907e-6)) and steps[1]["conv1"] == pytest.approx((806e-6, 886e-6))
    assert steps[0]["conv2"][0] > steps[0]["dense2"][0] > 0
    assert 0.5 * 13424e-6 < sum(map(sum, steps[0].values())) < 13424e-6


def test_a_gpu_run_on_a_cpu_build_of_cntk_is_unavailable(tmp_path, standin_worker):
    result = _run(_spec(device="gpu1"), tmp_path)
    assert result["status"] == "unavailable"
    assert result["reason"].startswith(f"cntk 2.7-standin in {sys.prefix} is a CPU build; ")


@pytest.fixture
def standin_gpu_build(tmp_path, standin_worker, monkeypatch):
    """The stand-in installed as cntk-gpu is (its distribution's name says GPU), on a node without GPUs."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "cntk_gpu-2.7.dist-info").mkdir()
    (tmp_path / "site" / "packages").mkdir()
    (tmp_path / "site" / "packages" / "cntk.py").symlink_to(STANDIN / "cntk.py")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site" / "packages"), os.environ["PYTHONPATH"]]))


@pytest.mark.parametrize("device", ["gpu1", "gpu2"])
def test_gpu_runs_the_worker_cannot_make_are_unavailable(tmp_path, standin_gpu_build, device):
    result = _run(_spec(device=device), tmp_path)
    assert result["status"] == "unavailable"
    assert result["reason"] == "CNTK sees 0 GPU(s) (C.device.all_devices()); rank 0 needs GPU 0"


def test_over_two_devices_mpiexec_starts_a_rank_for_each_with_its_share_of_the_batch(tmp_path, standin_worker,
                                                                                     capfd):
    result = _run(_spec(device="2xcpu"), tmp_path)
    assert result["status"] == "ok", result["reason"]
    printed = capfd.readouterr().out
    assert "mpiexec -n 2 --bind-to none" in printed and "CNTK: 2 ranks, batch 8 each" in printed
    assert len(result["iteration_seconds"]) == 12


def test_without_mpiexec_a_run_over_two_devices_is_unavailable(tmp_path, standin_worker, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = _run(_spec(device="2xcpu"), tmp_path)
    assert result["status"] == "unavailable"
    assert result["reason"] == (f"2xcpu: CNTK's data-parallel learner runs under MPI, and there is no mpiexec "
                                f"beside {sys.executable} or on PATH (Debian: openmpi-bin)")


def test_a_worker_that_dies_fails_the_run_with_its_exit_code(tmp_path, standin_worker, monkeypatch):
    monkeypatch.setenv("CNTK_STANDIN_EXIT_AT_STEP", "5")
    result = _run(_spec(), tmp_path)
    assert result["status"] == "failed"
    assert result["reason"] == "RuntimeError: the CNTK worker exited with code 3 (its error is in the log)"


def test_without_python_3_6_the_cntk_environment_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no python3.6 here
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))  # nor in pyenv
    with open(tmp_path / "build.log", "w") as log:
        status = envs.build_environment(ROOT / "envs" / "cntk.requirements.txt", tmp_path / "cntk", 1, log)
    assert status == {"status": "unavailable", "python": None, "reason": "CNTK 2.7 requires "
                      "CPython 3.6 (its last wheels are cp36 only), and this machine has none "
                      "(no working python3.6 on PATH or in pyenv)", "requirements": "cntk.requirements.txt",
                      "choice": "CPU build: nvidia-smi lists no GPU on this node"}


@pytest.mark.needs_env
@pytest.mark.parametrize("environment", ["cntk", pytest.param("cntk-2.5", marks=pytest.mark.slow)])  # today's CNTK
# 2.7 and the thesis's 2.5.1
def test_real_cntk_builds_every_network_with_its_parameter_count(environment, tmp_path):
    cntk_worker_python = framework_environment(environment)["worker_python"]
    plans, expected = {}, {}
    for name, sized_for in CASES:
        description = networks.network(name, sized_for)
        plans[f"{name}/{sized_for}"] = [description.input_shape, cntk_backend.plan(description)]
        expected[f"{name}/{sized_for}"] = [networks.trainable_parameters(description), [description.num_classes]]
    (tmp_path / "plans.json").write_text(json.dumps(plans))
    counted = subprocess.run([cntk_worker_python, str(IN_FRAMEWORK / "cntk_parameter_counts.py"),
                              str(cntk_backend.WORKER), str(tmp_path / "plans.json")],
                             capture_output=True, text=True, check=False)
    assert counted.returncode == 0, counted.stderr[-3000:]
    assert json.loads(counted.stdout.splitlines()[-1]) == expected


def test_real_cntk_trains_on_synthetic_data_and_reads_its_map_files(cntk_worker_python, tmp_path, monkeypatch):
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, cntk_worker_python)
    result = _run(_spec(iterations=20, warmup_iterations=5), tmp_path)
    assert result["status"] == "ok", result["reason"]
    assert result["framework_version"] == "2.7" and result["python"].startswith("3.6.")
    assert 0 < result["final_loss"] < 10 and result["timed_window"]["cpu_seconds"] > 0
    data = cntk_format(tmp_path, "mnist", 64, 16)
    result = _run(_spec(dataset="mnist-generated", data_dir=str(data)), tmp_path)
    # Its image reader, built against Ubuntu 16.04's OpenCV 3.1 dependencies (libjpeg8, libpng12, ...),
    # loads them from the environment (dlbench.envs.image_reader_libraries), and reads the PNGs.
    assert result["status"] == "ok", result["reason"]
    assert 0 < result["final_loss"] < 10 and result["timed_window"]["input_wait_seconds"] > 0
    # its accuracy run: after each epoch, every test image once through the reader's one sweep
    result = _run(_spec(dataset="mnist-generated", data_dir=str(data), task="accuracy", iterations=2 * 4,
                        warmup_iterations=0, epochs=2), tmp_path)
    assert result["status"] == "ok", result["reason"]
    assert [epoch["test_images"] for epoch in result["epochs"]] == [16, 16]
    assert all(0 <= epoch["test_accuracy"] <= 1 and 0 < epoch["test_loss"] < 10 for epoch in result["epochs"])
    # its profile: every layer of LeNet timed forward and backward in each profiled step (one left out)
    result = _run(_spec(task="profile", iterations=6, warmup_iterations=2), tmp_path)
    assert result["status"] == "ok", result["reason"]
    steps = result["profile"]["layers"]
    assert len(steps) == 4 and all(forward > 0 and backward > 0 for step in steps
                                   for name, (forward, backward) in step.items() if name != "flatten1")


def test_real_cntk_trains_over_two_mpi_ranks_that_end_with_the_same_weights(cntk_worker_python, tmp_path,
                                                                            monkeypatch, capfd):
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, cntk_worker_python)
    result = _run(_spec(device="2xcpu", iterations=20, warmup_iterations=5), tmp_path)
    # ok only if both ranks' weights agree at the end (Harness.final_loss): each trained on its own half
    assert result["status"] == "ok", result["reason"]
    printed = "".join(capfd.readouterr())
    assert "using 2 out of 2 MPI nodes" in printed and "CNTK: 2 ranks, batch 8 each" in printed
    assert 0 < result["final_loss"] < 10
    # its profile over the two: each rank's own detail log, summed by layer per step (one left out)
    result = _run(_spec(device="2xcpu", task="profile", iterations=6, warmup_iterations=2), tmp_path)
    assert result["status"] == "ok", result["reason"]
    devices = result["profile"]["devices"]
    assert len(devices) == 2 and devices[0] == result["profile"]["layers"]
    assert all(len(steps) == 4 and all(forward > 0 and backward > 0 for step in steps
                                       for name, (forward, backward) in step.items() if name != "flatten1")
               for steps in devices)
    assert result["profile"]["all_reduce_seconds"] == []  # CNTK's log has no event of the MPI all-reduce
