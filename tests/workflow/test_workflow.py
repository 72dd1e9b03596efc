"""The workflow end to end, as a user runs it: data -> runs x repetitions -> tables -> figures -> report."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
import yaml
from dlbench import formats, metrics, registry
from dlbench.checks import report_check
from dlbench.datasets import ilsvrc12
from dlbench.hardware import node

from ..conftest import ROOT, framework_environment

TINY = yaml.safe_load((ROOT / ".test" / "config-tiny" / "config.yaml").read_text())


def snakemake(workdir, *args, check=True, env=None):
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory",
               str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if check and result.returncode:
        raise AssertionError(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tensorflow_python, mxnet_python, caffe_python, cntk_worker_python, jax_python):
    """One real run of the tiny config in pip virtualenvs: PyTorch's built by the workflow itself, the others
    the tests' own (built once for the session, by the function the workflow's framework_venv job calls)."""
    workdir = tmp_path_factory.mktemp("workflow")
    (workdir / "config.yaml").write_text(yaml.safe_dump(TINY))
    for environment in ("tensorflow", "mxnet", "caffe", "cntk", "jax"):
        (workdir / ".venvs" / environment).mkdir(parents=True)
        status = framework_environment(environment)
        (workdir / ".venvs" / environment / "environment.json").write_text(json.dumps(status))
    snakemake(workdir)
    # results/stages.md is the last workflow run's: kept as the whole run left it, before tests rerun parts
    shutil.copy(workdir / "results" / "stages.md", workdir / "whole-run-stages.md")
    snakemake(workdir, "--report", "results/report.html")
    return workdir


@pytest.mark.slow
def test_every_run_has_a_valid_record_and_a_log(finished, record_schema):
    records = sorted((finished / "results" / "runs").rglob("rep*.json"))
    # training frameworks x (5 cells trained, 1 inferred, 1 to accuracy, 1 profiled), one repetition; ONNX
    # Runtime, raw tf.nn and cuDNN's calls: the inferred cell only
    assert len(records) == 8 * 8 + 3
    # the package's name, a CPU or CUDA build's (tensorflow-cpu, mxnet-cu117) alike
    package = {"pytorch": "torch", "tensorflow": "tensorflow", "mxnet": "mxnet", "caffe": "protobuf",
               "cntk": "cntk", "keras-tensorflow": "keras", "keras-jax": "jax", "keras-torch": "keras",
               "onnxruntime": "onnxruntime", "tensorflow-nn": "tensorflow"}
    environment = {"keras-tensorflow": "tensorflow", "keras-jax": "jax", "keras-torch": "pytorch",
                   "onnxruntime": "pytorch", "tensorflow-nn": "tensorflow"}
    for path in records:
        record = json.loads(path.read_text())
        jsonschema.validate(record, record_schema)
        assert path.with_suffix(".log").exists()
        framework = record["run"]["framework"]
        if not_wired := registry.REGISTRY[framework].not_yet.get(record["run"]["task"]):
            assert record["status"] == "unavailable" and not_wired in record["reason"], record["reason"]
            continue
        if framework == "cudnn":  # cuDNN's own calls need an NVIDIA GPU: the cell says so
            assert record["status"] == "unavailable" and "GPU" in record["reason"], record["reason"]
            continue
        # CNTK reads its map files too: its image reader's Ubuntu 16.04 libraries are in its environment.
        assert record["status"] == "ok", record["reason"]
        assert record["provenance"]["python"]
        assert [name for name, version in record["provenance"]["packages"].items()
                if name.startswith(package[framework]) and version], record["provenance"]["packages"]
        built = json.loads((finished / ".venvs" / environment.get(framework, framework) / "environment.json")
                           .read_text())
        if framework in built["requirements"]:  # its own environment's framework: the build it said it is
            assert record["provenance"]["framework_build"] == built["framework_build"]
        assert (built.get("worker_python") or built["python"]) in path.with_suffix(".log").read_text()
        computed = record["compute"]
        assert 0 < computed["ceiling_fraction"] < 2, computed  # over this node's measured ceiling
        assert (computed["ceiling_flag"] is None) == (computed["ceiling_fraction"] <= 1.05), computed
        assert computed["mfu"] is None or 0 < computed["mfu"] <= 1, computed  # over the CPU's peak, where known
        optimizer = record["execution"]["optimizer"]
        assert optimizer["kind"] == ("rmsprop" if record["run"]["network"] in ("mlp", "lstm") else "sgd")
        if optimizer["kind"] == "rmsprop" and framework in ("pytorch", "caffe", "cntk"):
            assert record["execution"]["optimizer_difference"], framework  # stated where it is not Keras's
        if record["run"]["network"] == "vgg16":  # enough compute per step to keep every thread busy
            # more than one core's worth, in every framework (not 2.0: CI shares this machine's 2 cores), or
            # the run says what took the cores from it
            timing = record["timing"]
            contended = (timing["contention_share"] or 0) > metrics.FLAGS["contended"].above
            assert timing["cpu_per_wall"] > 1.2 or contended, (framework, timing)
        if record["run"]["task"] == "inference":  # LeNet on the generated MNIST files, each framework's reader
            latency = record["latency"]
            # single images, one call each (how a single image's time compares with a batch's is a speed, not asserted:
            # beside another test worker on 2 cores, the two windows see different loads)
            assert latency["batch_size"] == 1 and len(latency["call_ms"]) == 100, latency
            assert 0 < latency["p50_ms"] <= latency["p99_ms"], latency
        if record["run"]["task"] == "accuracy":  # two epochs of 256 // 32 steps, the 64 test images after each
            quality = record["quality"]
            assert len(record["timing"]["iteration_seconds"]) == 16, framework
            assert [epoch["test_images"] for epoch in quality["epochs"]] == [64, 64], framework
            assert quality["accuracy"] > 0.5 and quality["time_to_accuracy_seconds"] > 0, (framework, quality)
        if record["run"]["task"] == "profile":  # AlexNet layer by layer, in every framework that trains: 4 steps
            profile = record["profile"]
            assert profile["steps"] == 4 and [layer["name"] for layer in profile["layers"]][:3] == [
                "conv1", "relu1", "maxpool1"], profile
            # a profiled step over an unprofiled one (how much slower is the machine's load's, make bench's)
            assert profile["overhead"] == pytest.approx(profile["iteration_ms"] / profile["unprofiled_iteration_ms"])
            # TensorFlow's and XLA's ops overlap on their threads: layers' times may sum to more than the step
            assert profile["unaccounted_share"] < 1, profile
            assert all(layer["backward_ms"] > 0 for layer in profile["layers"] if layer["kind"] in ("conv", "dense"))


@pytest.mark.slow
def test_generated_data_is_labelled_as_generated(finished):
    assert (finished / "data" / "raw" / "mnist-generated" / "GENERATED").exists()
    # Each framework's own format is built (CNTK's map files too, although CNTK cannot run here),
    # nothing for synthetic data.
    assert sorted(p.name for p in (finished / "data" / "mnist-generated").iterdir() if p.is_dir()) == [
        "cntk", "lmdb", "recordio", "tfrecord"]
    assert not (finished / "data" / "cifar10-synthetic").exists()
    runs = pd.read_csv(finished / "results" / "tables" / "runs.csv")
    assert set(runs["dataset"]) == {"mnist-generated", "mnist-synthetic", "cifar10-synthetic", "imagenet-generated",
                                    "text-synthetic"}
    assert not (finished / "data" / "mnist").exists()
    assert (finished / "data" / "raw" / "imagenet-generated" / "GENERATED").exists()
    lmdb_dir = finished / "data" / "imagenet-generated" / "lmdb"
    assert sorted(p.name for p in lmdb_dir.iterdir() if p.is_symlink()) == [
        "test-00000-of-00001", "train-00000-of-00002", "train-00001-of-00002"]


@pytest.mark.slow
def test_a_rerun_converts_only_the_missing_shard(finished):
    # As an interrupted conversion leaves it: some shards done, one never finished, no gathered format.
    shutil.rmtree(finished / "data" / "imagenet-generated" / "shards" / "lmdb" / "train-00001-of-00002")
    shutil.rmtree(finished / "data" / "imagenet-generated" / "lmdb")
    result = snakemake(finished, "data/imagenet-generated/lmdb")
    log = result.stdout + result.stderr
    assert log.count("rule convert_shard:") == 1 and "wildcards: dataset=imagenet-generated, format=lmdb, " \
        "split=train, index=00001, shards=00002" in log
    assert "rule gather_shards:" in log and "rule train:" not in log


@pytest.mark.slow
def test_a_truncated_shard_is_converted_again_alone_before_a_run_reads_it(finished):
    """The DAG's look at a conversion moves nothing: a damage stamp, an input of the shard's own job and of the
    gathering, has both run again, and only them."""
    shard = finished / "data" / "imagenet-generated" / "shards" / "lmdb" / "train-00000-of-00002"
    with open(shard / "data.mdb", "r+b") as data:
        data.truncate(4096)
    record = "results/runs/caffe/imagenet-generated/alexnet/cpu/fp32/train/rep1.json"
    dry = snakemake(finished, record, "-n", "--quiet", "rules")
    jobs = dict(line.split() for line in dry.stdout.splitlines() if len(line.split()) == 2)
    assert jobs["convert_shard"] == "1" and jobs["gather_shards"] == "1", dry.stdout
    assert "data.mdb has 4,096 bytes" in dry.stderr and (shard / "data.mdb").stat().st_size == 4096
    result = snakemake(finished, "data/imagenet-generated/lmdb")
    log = result.stdout + result.stderr
    assert log.count("rule convert_shard:") == 1 and "index=00000, shards=00002" in log and "rule train:" not in log
    formats.check(finished / "data" / "imagenet-generated" / "lmdb")


@pytest.mark.slow
def test_tables_figures_and_report(finished):
    tables = finished / "results" / "tables"
    appendix = pd.read_csv(tables / "appendix.csv")
    speed = appendix.query("metric == 'train_speed' and n == 1")
    # accuracy runs too; every training framework's profile runs (unprofiled steps)
    assert len(speed) == 8 * 5 + 8 + 8 and (speed["mean"] > 0).all()
    for metric in ("inference_speed", "latency_p50", "latency_p99"):
        inferred = appendix.query("metric == @metric and n == 1")
        assert len(inferred) == 10 and set(inferred["network"]) == {"lenet"} and (inferred["mean"] > 0).all()
    assert "cpu inference" in (tables / "appendix.md").read_text()  # a column beside cpu
    assert (tables / "appendix.tex").stat().st_size > 0
    # each stage's time, from Snakemake's log of the run (dlbench.jobs.stages); each run's parts
    stages = (finished / "whole-run-stages.md").read_text()
    assert all(f"| {stage} " in stages for stage in ("environments", "data", "ceiling", "runs", "tables and figures"))
    # seed 002's question: LeNet's single-image latency through Keras and ONNX Runtime over the native frameworks'
    cost = pd.read_csv(tables / "api_cost.csv").query("network == 'lenet'").set_index("framework")
    for framework in ("keras-torch", "keras-tensorflow", "onnxruntime"):
        assert cost.loc[framework, "latency_p50 inference ratio"] > 0, framework
    assert "What an API costs" in (finished / "results" / "report.html").read_text()  # its caption
    figures = sorted((finished / "results" / "figures").rglob("*.png"))
    cell_tasks = {("mnist-generated", "lenet"): {"train", "inference", "accuracy"},
                  ("cifar10-synthetic", "alexnet"): {"profile"}}
    cells = [("mnist-synthetic", "mlp"), ("text-synthetic", "lstm"), ("cifar10-synthetic", "vgg16"),
             ("imagenet-generated", "alexnet"), *cell_tasks]
    # a cell's figures: the metrics its runs measure (no GPU metric on CPUs), every training step's time;
    # LeNet's accuracy over time, AlexNet's time per layer and every profiled step; per dataset with training runs a
    # heatmap of speed
    # (and of CPU energy per image where RAPL counts it); ours beside the thesis
    # what the node can measure, as the node_facts job found it
    measured = json.loads(next((finished / "results" / "nodes").glob("*.json")).read_text())
    facts = {"rapl": measured["rapl"], "cpu_peak": measured["cpu_peak"]}
    bars = sum(metrics.drawn(metric, cell_tasks.get(cell, {"train"}), ["cpu"], **facts)
               for cell in cells for metric in metrics.METRICS)
    trained = [cell for cell in cells if "train" in cell_tasks.get(cell, {"train"})]
    heatmaps = sorted((finished / "results" / "figures").glob("*/*_heatmap.png"))
    assert len(heatmaps) == len({dataset for dataset, _ in trained}) * sum(
        metrics.drawn(metric, ["train"], ["cpu"], **facts) for metric, definition in metrics.METRICS.items()
        if definition.best)
    # + the accuracy curve, the layers, every profiled step and each block's passes; + the thesis figure
    assert len(figures) == bars + len(trained) + 4 + len(heatmaps) + 1
    assert not list((finished / "results" / "figures").rglob("gpu_*"))  # a CPU-only config: no GPU figures
    steps = (finished / "results" / "figures" / "mnist-generated" / "lenet" / "iteration_times.svg").read_text()
    assert all(f'id="steps {framework} cpu rep 1"' in steps for framework in ("pytorch", "tensorflow"))
    beside = pd.read_csv(tables / "thesis.csv").query("metric == 'train_speed' and network == 'lenet'")
    assert (beside.set_index("framework").loc["pytorch", ["thesis", "ratio"]] > 0).all()
    assert beside["apples_to_oranges"].str.contains("generated stand-in files vs the real dataset").all()
    assert len(pd.read_csv(tables / "thesis_ranks.csv")) >= 1
    laid_out = (tables / "appendix_a.md").read_text()  # Appendix A's own layout, ours beside the thesis's
    lenet = next(line for line in laid_out.splitlines() if line.startswith(
        "| Average Training Speed (images per second) | MNIST     | LeNet     | PyTorch"))
    theirs, ours = (cell.strip() for cell in lenet.split("|")[5:7])  # the CPU column
    assert theirs == "1,448" and float(ours.replace(",", "")) > 0
    layers = pd.read_csv(tables / "layers.csv").set_index("framework")
    assert layers.loc["pytorch", "layer 1"].split()[0] in ("conv2", "conv3", "conv4", "conv5", "dense1", "dense2")
    assert all(layers.loc[framework, "layer 1"] for framework in ("tensorflow", "mxnet", "caffe", "cntk",
                                                                  "keras-tensorflow", "keras-jax", "keras-torch"))
    assert (finished / "results" / "figures" / "cifar10-synthetic" / "alexnet" / "layers.svg").exists()
    steps_drawn = (finished / "results" / "figures" / "cifar10-synthetic" / "alexnet" / "layer_steps.svg").read_text()
    assert all(f'id="block {framework} cpu profile fc2"' in steps_drawn for framework in ("pytorch", "caffe", "cntk"))
    lenet = finished / "results" / "figures" / "mnist-generated" / "lenet"
    assert (lenet / "latency_p50.png").exists() and (lenet / "accuracy_curve.png").exists()
    curves = (lenet / "accuracy_curve.svg").read_text()
    assert all(f'id="curve {framework} cpu accuracy rep 1"' in curves
               for framework in ("pytorch", "tensorflow", "mxnet", "caffe", "cntk", "keras-jax"))
    accuracy = pd.read_csv(tables / "accuracy.csv").set_index("framework")
    assert "(n=1, no interval)" in accuracy.loc["pytorch", "test_accuracy"] and accuracy.loc["pytorch", "epochs"] == 2
    assert "(n=1, no interval)" in accuracy.loc["cntk", "test_accuracy"]
    assert accuracy["data"].str.startswith("generated stand-in").all()
    report = (finished / "results" / "report.html").read_text()
    assert "Accuracy and time to accuracy" in report
    # the menu names a figure's metric in words with its unit
    assert "train speed (images/s)" in report and "which framework: train speed (images/s)" in report
    # every figure and table has its caption (report/*.rst)
    assert report.count("error bars its 95 % confidence interval") == bars
    assert "apples to oranges" in report and "Which framework, at a glance" in report
    assert "Every training step of every run" in report
    assert "Where a training step's time goes" in report and "Every profiled training step" in report
    assert "Appendix A layout" in report and "Every run of the workflow" in report


@pytest.mark.slow
def test_the_report_shows_every_figure_in_a_browser(finished):
    """Headless Chromium opens the report, shows each figure as its menu entry does and screenshots it
    (results/report-screenshots/, to be looked at): none missing, blank or broken, no script errors."""
    rendered, problems = report_check.check(finished / "results" / "report.html",
                                            finished / "results" / "report-screenshots")
    assert not problems
    assert sorted(rendered) == sorted(str(path.relative_to(finished)) for path in
                                      (finished / "results" / "figures").rglob("*.png"))


@pytest.mark.slow
def test_a_single_figure_is_rebuilt_alone(finished):
    target = "results/figures/mnist-generated/lenet/train_speed.png"
    (finished / target).unlink()
    result = snakemake(finished, target)
    assert (finished / target).exists()
    assert "rule train:" not in result.stdout + result.stderr


@pytest.mark.slow
def test_the_thesis_config_schedules_one_job_per_run_and_every_format(tmp_path):
    thesis = yaml.safe_load((ROOT / "config" / "thesis.yaml").read_text())
    thesis["ilsvrc12"]["directory"] = str(tmp_path / "ILSVRC2012")  # the user's archives (a miniature here)
    ilsvrc12.generate(tmp_path / "ILSVRC2012", classes=2, train_images=4, test_images=2, seed=0)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(thesis))
    # Real datasets as once fetched (the fetch checkpoint's statuses): the conversions are then known
    # before the run, as a dry run lists them.
    for family in ("mnist", "cifar10", "imagenet"):
        (tmp_path / "data" / "raw" / family).mkdir(parents=True)
        (tmp_path / "data" / "raw" / family / "fetch.json").write_text(json.dumps({"status": "ok", "reason": ""}))
    result = snakemake(tmp_path, "-n", "--quiet", "rules")
    jobs = dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)
    assert jobs["train"] == str(5 * 9 * 5 * 3)  # frameworks x cases x hardware columns x repetitions
    assert jobs["ceiling"] == "4"  # once per target and processor: the two CPUs, a K20m, a P100
    assert jobs["convert"] == str(2 * 4)  # MNIST and CIFAR10 into lmdb, tfrecord, recordio and cntk
    assert jobs["index_ilsvrc12"] == "1" and jobs["gather_shards"] == "4"
    assert jobs["convert_shard"] == str(4 * (1024 + 128))  # ILSVRC12: every format in independent shards
    # Through the Slurm profile: each framework's environment built once per target, on a node of the target (its
    # partition and constraint; a GPU target's holding a GPU, whose driver and model choose the build), and
    # MXNet's once more where RecordIO is written
    planned = snakemake(tmp_path, "-n", "--profile", str(ROOT / "profiles" / "slurm")).stdout
    builds = {}
    for job in planned.split("\nrule ")[1:]:
        if job.startswith("framework_venv:"):
            venv = re.search(r"output: \.venvs/(\S+)/environment\.json", job)[1]
            builds[venv] = re.search(r"resources: (.*)", job)[1]
    assert sorted(builds) == sorted([f"{target}@{environment}" for target in ("cpu-12", "cpu-20", "k20m", "p100")
                                     for environment in ("caffe", "cntk", "mxnet", "pytorch", "tensorflow")]
                                    + ["mxnet"])
    assert "gpu=1, constraint=p100, gpu_model=p100, slurm_partition=gpu" in builds["p100@pytorch"]
    assert "gpu=0, constraint=e5-2630, slurm_partition=cpu" in builds["cpu-20@caffe"]


# Put first on a dry run's PYTHONPATH: NVML and the RAPL counters refuse, and say so in the calls file.
REFUSING_HARDWARE = """
import sys, types
sys.path.insert(0, {scripts!r})


def refused(what):
    def call(*args, **kwargs):
        with open({calls!r}, "a") as calls:
            calls.write(what + "\\n")
        raise RuntimeError(what + " asked while the DAG is built")
    return call


class NoNvml(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return refused("pynvml." + name)


sys.modules["pynvml"] = NoNvml("pynvml")
from dlbench.hardware import host
host.Rapl.__init__ = refused("RAPL")
"""


def test_the_dag_is_built_without_asking_the_hardware(tmp_path):
    """With NVML, the RAPL counters and nvidia-smi refusing, a GPU config's dry run plans every job: the node is told
    apart by files alone, and what it can measure is the node_facts job's. Once that job's file is there, the
    figures follow from it."""
    refusing, calls = tmp_path / "refusing", tmp_path / "calls"
    refusing.mkdir()
    (refusing / "sitecustomize.py").write_text(REFUSING_HARDWARE.format(scripts=str(ROOT / "workflow" / "scripts"),
                                                                        calls=str(calls)))
    (refusing / "nvidia-smi").write_text(f"#!/bin/sh\necho nvidia-smi >> {calls}\nexit 1\n")
    (refusing / "nvidia-smi").chmod(0o755)
    environment = {**os.environ, "PYTHONPATH": str(refusing), "PATH": f"{refusing}:{os.environ['PATH']}"}
    workdir = tmp_path / "work"
    workdir.mkdir()
    shutil.copy(ROOT / ".test" / "config-gpu" / "config.yaml", workdir / "config.yaml")

    def planned() -> dict:
        result = snakemake(workdir, "-n", "--quiet", "rules", env=environment)
        return dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)

    jobs = planned()
    assert jobs["node_facts"] == "1" and jobs["ceiling"] == "2" and "figure" not in jobs
    facts = workdir / "results" / "nodes" / f"{node.key(node.identity())}.json"
    facts.parent.mkdir(parents=True)
    facts.write_text(json.dumps({"rapl": True, "cpu_peak": False, "gpus": []}))
    jobs = planned()
    assert "node_facts" not in jobs and int(jobs["figure"]) > 0 and int(jobs["heatmap"]) > 0
    assert not calls.exists(), calls.read_text()


def test_the_seed_003_config_schedules_its_accuracy_runs_on_the_real_datasets_on_two_gpu_models(tmp_path):
    shutil.copy(ROOT / "config" / "seed003.yaml", tmp_path / "config.yaml")
    for family in ("mnist", "kmnist", "cifar10"):  # as once fetched: the conversions are known before the run
        (tmp_path / "data" / "raw" / family).mkdir(parents=True)
        (tmp_path / "data" / "raw" / family / "fetch.json").write_text(json.dumps({"status": "ok", "reason": ""}))
    result = snakemake(tmp_path, "-n", "--quiet", "rules")
    jobs = dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)
    assert jobs["train"] == str(8 * 2 * 3 * 3 * 2)  # frameworks x networks x datasets x repetitions x GPU targets
    assert jobs["accuracy_curve"] == "6" and jobs["accuracy_table"] == "1"
    assert jobs["targets_table"] == "1" and jobs["targets_figure"] == "1"  # the P100 over the K80
    assert jobs["unpack_kmnist"] == "1" and jobs["convert"] == str(3 * 4)  # each real dataset in each format


def test_the_seed_004_config_converts_only_its_ten_classes_and_runs_each_batch_with_and_without_profiling(tmp_path):
    seed004 = yaml.safe_load((ROOT / "config" / "seed004.yaml").read_text())
    seed004["ilsvrc12"]["directory"] = str(tmp_path / "ILSVRC2012")  # the user's archives (a miniature here)
    ilsvrc12.generate(tmp_path / "ILSVRC2012", classes=12, train_images=24, test_images=6, seed=0)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(seed004))
    (tmp_path / "data" / "raw" / "imagenet").mkdir(parents=True)  # as once fetched
    (tmp_path / "data" / "raw" / "imagenet" / "fetch.json").write_text(json.dumps({"status": "ok", "reason": ""}))
    result = snakemake(tmp_path, "-n", "--quiet", "rules")
    jobs = dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)
    # 8 frameworks x (AlexNet-BN at 64 and 128, VGG-11 at 12) x (gpu1, gpu2) x (train, profile) x 3 repetitions
    assert jobs["train"] == str(8 * 3 * 2 * 2 * 3)
    assert jobs["index_ilsvrc12"] == "1" and jobs["select_classes"] == "1"
    assert jobs["convert_shard"] == str(4 * (10 + 1))  # ten classes: a hundredth of ILSVRC12's 1024 + 128 shards


@pytest.mark.slow
def test_the_seed_004_miniature_profiles_and_draws_every_profiled_step_of_each_block(tmp_path, tensorflow_python):
    """.test/config-seed004's AlexNet-BN profile runs in TensorFlow, the seed's framework (one repetition, both
    batches) on four classes of a generated ILSVRC12; the per-step figures are drawn from the series the runs
    kept; then PyTorch's on its two processes (2xcpu), a panel per process. (VGG-11's cells are the same path at
    about three times the cost; CI dry-runs them.)"""
    config = yaml.safe_load((ROOT / ".test" / "config-seed004" / "config.yaml").read_text())
    config.update(frameworks=["tensorflow"], devices=["cpu"], repetitions=1,
                  benchmarks=[{**case, "tasks": ["profile"]} for case in config["benchmarks"]])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    for environment, status in (("tensorflow", framework_environment("tensorflow")),  # the tests' own venv
                                ("pytorch", {"status": "ok", "python": None, "reason": ""})):  # the ceiling's: ours
        (tmp_path / ".venvs" / environment).mkdir(parents=True)
        (tmp_path / ".venvs" / environment / "environment.json").write_text(json.dumps(status))
    figure = Path("results/figures/imagenet-generated-4classes/alexnet_bn/layer_steps.svg")
    snakemake(tmp_path, str(figure))
    runs = tmp_path / "results" / "runs" / "tensorflow" / "imagenet-generated-4classes" / "alexnet_bn" / "cpu"
    for variant in ("fp32-b4", "fp32-b8"):
        record = json.loads((runs / variant / "profile" / "rep1.json").read_text())
        assert record["status"] == "ok", (variant, record["reason"])
        assert (runs / variant / "profile" / "rep1.series.json.gz").exists()
        # the seed's momentum update, attributed: each convolution's and dense layer's, none for a ReLU
        layers = record["profile"]["layers"]
        assert all(layer["update_ms"] > 0 for layer in layers if layer["kind"] in ("conv", "dense")), layers
        assert all(layer["update_ms"] == 0 for layer in layers if layer["kind"] == "relu"), layers
    drawn = (tmp_path / figure).read_text()
    for cell in ("tensorflow cpu fp32-b4 profile", "tensorflow cpu fp32-b8 profile"):
        assert all(f'id="block {cell} {block}"' in drawn for block in ("conv1", "conv5", "fc1", "fc2", "output"))
        assert f'id="total {cell}"' in drawn and f'id="profiled {cell}"' in drawn  # its Figure 4-14
    assert (tmp_path / figure.with_suffix(".png")).exists()
    phases = (tmp_path / figure.with_name("layer_phases.svg")).read_text()  # its Figures 4-5 to 4-12
    assert all(f'id="{phase} tensorflow cpu fp32-b8 profile {block}"' in phases
               for phase in ("forward", "backward") for block in ("conv1", "conv5", "fc1", "fc2", "output"))
    # the seed's two GPUs as two processes (the miniature's 2xcpu), in PyTorch, whose profiler times each apart
    config.update(frameworks=["pytorch"], devices=["2xcpu"], benchmarks=[
        {**config["benchmarks"][0], "batch_size": 4}])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake(tmp_path, str(figure))
    drawn = (tmp_path / figure).read_text()
    assert all(f'id="block pytorch 2xcpu profile {block}{process}"' in drawn
               for block in ("conv1", "fc2") for process in ("", " process 1"))


@pytest.mark.slow
@pytest.mark.parametrize("config,runs", [
    # 8 frameworks, Keras 2 on TF 1.9 and on MXNet 1.2 and those two, x (mlp, lstm, cifar10_cnn, resnet50) x (train,
    # inference), and Keras's 3 + 2 x 4 networks through model.fit; x (cpu, gpu1) x 3
    ("keras_benchmarks.yaml", (12 * 4 * 2 + 5 * 4) * 2 * 3),
    # LeNet's inference in 7 frameworks (cuDNN's and ONNX Runtime's too) and 3 of TF 1.9's (its layers, Keras 2, raw
    # ops) x (cpu, gpu1) x 3
    ("seed002.yaml", 10 * 2 * 3),
])
def test_the_configs_of_seeds_001_and_002_schedule_their_studies(tmp_path, config, runs):
    shutil.copy(ROOT / "config" / config, tmp_path / "config.yaml")
    result = snakemake(tmp_path, "-n", "--quiet", "rules")
    jobs = dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)
    assert jobs["train"] == str(runs)
    assert "convert" not in jobs  # synthetic data: nothing to download or convert
