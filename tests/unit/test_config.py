"""A bad config fails before any job runs, naming the key and what is allowed."""
import copy
import re
import subprocess
import sys
from dataclasses import asdict, fields

import pytest
import yaml
from dlbench.config import (
    FIGURE_4_5,
    MAX_CASES,
    MAX_CONFIG_VALUES,
    SLURM_RESOURCES,
    THESIS_GPUS,
    YTE_OPT_IN,
    ConfigError,
    cases,
    check_devices,
    check_files,
    check_size,
    class_subsets,
    targets,
    without_releases,
)
from dlbench.datasets import description
from dlbench.registry import REGISTRY
from dlbench.spec import IMAGENET_LABEL, RUN_FIELDS, RunSpec, dataset_classes, whole_dataset
from snakemake.exceptions import WorkflowError

from ..conftest import ROOT, validated

GOOD = {"frameworks": ["pytorch"], "benchmarks": [{"dataset": "mnist", "data": "synthetic", "networks": ["lenet"]}]}


def test_defaults_are_filled_in_and_figure_4_5_applies():
    config = validated(GOOD)
    assert config["repetitions"] == 3 and config["devices"] == ["cpu"] and config["environment"] == "venv"
    (case,) = cases(config)
    assert (case.batch_size_global, case.iterations, case.learning_rate) == FIGURE_4_5[("mnist", "lenet")]
    assert case.warmup_iterations == 94  # 10 % of 938, above the floor of 10
    assert case.dataset == "mnist-synthetic"


def test_warmup_added_times_all_of_figure_4_5s_iterations_after_the_warm_up():
    """The thesis timed all 938 LeNet iterations; by default the 94 warm-up iterations are among them."""
    bench = {**GOOD["benchmarks"][0], "warmup_added": True}
    (case,) = cases(validated({**GOOD, "benchmarks": [bench]}))
    assert (case.iterations, case.warmup_iterations) == (938 + 94, 94)
    (short,) = cases(validated({**GOOD, "benchmarks": [{**bench, "iterations": 10, "warmup_iterations": 10}]}))
    assert (short.iterations, short.warmup_iterations) == (20, 10)  # as many timed as asked for
    accuracy = {"dataset": "mnist", "networks": ["lenet"], "tasks": ["accuracy"], "warmup_added": True}
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].warmup_added: an accuracy case trains whole epochs"):
        cases(validated({**GOOD, "benchmarks": [accuracy]}))


def test_a_list_of_batches_makes_a_cell_per_batch_named_by_it():
    """Seed 004 ran AlexNet at 64 and 128: two cells, their batch in the variant; a single batch names nothing."""
    bench = {"dataset": "mnist", "data": "synthetic", "networks": ["lenet"], "batch_size": [64, 128]}
    swept = cases(validated({**GOOD, "benchmarks": [bench]}))
    assert [(case.batch_size_global, case.variant) for case in swept] == [(64, "fp32-b64"), (128, "fp32-b128")]
    spec = swept[0].run_spec(1, threads=2, data_dir=None, loader_workers=0)
    assert spec.record_block(None)["batch_swept"] is True and spec.variant == "fp32-b64"
    (single,) = cases(validated({**GOOD, "benchmarks": [{**bench, "batch_size": 64}]}))
    assert single.variant == "fp32" and "batch_swept" not in single.run_spec(1, 2, None, 0).record_block(None)
    with pytest.raises(WorkflowError):
        validated({**GOOD, "benchmarks": [{**bench, "batch_size": [64, 64]}]})
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].batch_size: 3 cannot be split over 2 devices"):
        cases(validated({**GOOD, "devices": ["gpu2"], "benchmarks": [{**bench, "batch_size": [4, 3]}]}))


def test_a_class_subset_of_imagenet_names_its_dataset_and_sizes_the_network_for_it():
    bench = {"dataset": "imagenet", "data": "generated", "networks": ["alexnet_bn"], "classes": 4}
    (case,) = cases(validated({**GOOD, "benchmarks": [bench]}))
    assert (case.dataset, case.family, case.data_mode, case.classes) == ("imagenet-generated-4classes", "imagenet",
                                                                         "generated", 4)
    assert description(case.network, case.family, case.input_size, case.classes).num_classes == 4
    listed = cases(validated({**GOOD, "benchmarks": [{**bench, "classes": ["n01440764", "n02102040"]}]}))[0]
    assert re.fullmatch(r"imagenet-generated-2classes-[0-9a-f]{6}", listed.dataset) and listed.classes == 2
    assert class_subsets(validated({**GOOD, "benchmarks": [bench]})) == {"imagenet-generated-4classes": 4}
    # the label names the subset and the whole dataset it is converted from, the rules' constraint takes it
    for label, count, whole in ((case.dataset, 4, "imagenet-generated"), (listed.dataset, 2, "imagenet-generated"),
                                ("imagenet-10classes", 10, "imagenet")):
        assert (dataset_classes(label), whole_dataset(label)) == (count, whole)
        assert re.fullmatch(IMAGENET_LABEL, label)
    assert dataset_classes("imagenet-generated") is None and not re.fullmatch(IMAGENET_LABEL, "imagenet-synthetic")
    with pytest.raises(ValueError, match="bad dataset label 'imagenet-0classes'"):
        dataset_classes("imagenet-0classes")
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].classes: 11 of the 10 classes of imagenet-generated; "
                                          r"allowed: 2 to 10"):
        cases(validated({**GOOD, "benchmarks": [{**bench, "classes": 11}]}))
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].classes: a class subset is taken from ILSVRC12's files"):
        cases(validated({**GOOD, "benchmarks": [{**bench, "dataset": "cifar10", "networks": ["alexnet"]}]}))
    with pytest.raises(WorkflowError):
        validated({**GOOD, "benchmarks": [{**bench, "classes": ["dog", "cat"]}]})


def test_a_runs_spec_is_its_cases_and_what_the_run_adds():
    (case,) = cases(validated(GOOD))
    spec = case.run_spec(2, threads=4, data_dir=None, loader_workers=1)
    assert {name: getattr(spec, name) for name in asdict(case)} == asdict(case)
    assert (spec.repetition, spec.seed, spec.threads, spec.data_dir, spec.loader_workers) == (2, 2, 4, None, 1)
    assert (spec.family, spec.data_mode, spec.variant) == (case.family, case.data_mode, case.variant)
    # a run parameter is defined once: a case has every field of RunSpec but what a run adds, with its default
    assert [f.name for f in fields(case)] == [f.name for f in fields(RunSpec) if f.name not in RUN_FIELDS]
    defaults = {f.name: f.default for f in fields(RunSpec)}
    assert {f.name: f.default for f in fields(case)} == {name: defaults[name] for name in asdict(case)}


@pytest.mark.parametrize("change,message", [
    ({"frameworks": ["tensorflw"]}, (r"'tensorflw' is not one of \['caffe', 'tensorflow', 'pytorch', 'mxnet', 'cntk', "
                                     r"'keras-tensorflow', 'keras-jax', 'keras-torch', 'onnxruntime', "
                                     r"'tensorflow-nn', 'cudnn', 'cntk-2.5', 'mxnet-1.2', 'tensorflow-1.9', "
                                     r"'tensorflow-nn-1.9', 'pytorch-1.0', 'keras2-tensorflow', 'keras2-mxnet', "
                                     r"'mxnet-1.4', 'mxnet-1.6', 'tensorflow-2.16', 'tensorflow-2.18'\]")),
    ({"repetitons": 3}, r"'repetitons' was unexpected"),
])
def test_schema_names_the_key_and_the_allowed_values(change, message):
    with pytest.raises(WorkflowError, match=message):
        validated({**GOOD, **change})


def test_a_bad_device_is_explained_in_words():
    with pytest.raises(ConfigError, match=r"devices\[1\]: bad device 'gpu0'; allowed: cpu, gpuN \(N ≥ 1 GPUs\), "
                                          r"<n>x<cpu\|gpuN> \(n ≥ 2 processes"):
        check_devices({**GOOD, "devices": ["cpu", "gpu0"]})
    check_devices({**GOOD, "devices": ["cpu", "gpu2", "2xgpu1", "4xcpu", "2x2xgpu1", "1x2xcpu"]})


def test_the_documented_defaults_are_the_schemas():
    schema = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())
    frameworks = schema["properties"]["frameworks"]["default"]
    assert f"| `frameworks` | `[{', '.join(frameworks)}]` |" in (ROOT / "config" / "README.md").read_text()
    assert yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["frameworks"] == frameworks


def test_precisions_and_compile_multiply_the_cases():
    config = validated({**GOOD, "precisions": ["fp32", "bf16"], "compile": [False, True]})
    assert sorted(case.variant for case in cases(config)) == ["bf16", "bf16-compiled", "fp32", "fp32-compiled"]
    assert [case.variant for case in cases(validated(GOOD))] == ["fp32"]
    with pytest.raises(WorkflowError, match=r"'fp8' is not one of \['fp32', 'tf32', 'bf16', 'fp16'\]"):
        validated({**GOOD, "precisions": ["fp8"]})


def test_tasks_multiply_the_cases_and_train_is_the_default():
    assert [case.task for case in cases(validated(GOOD))] == ["train"]
    config = copy.deepcopy(GOOD)
    config["benchmarks"][0].update(tasks=["train", "inference"], latency_calls=50)
    found = {case.task: case for case in cases(validated(config))}
    assert sorted(found) == ["inference", "train"] and found["inference"].latency_calls == 50
    config["benchmarks"][0]["tasks"] = ["predict"]
    with pytest.raises(WorkflowError, match=r"'predict' is not one of \['train', 'inference', 'accuracy', 'profile'\]"):
        validated(config)


def test_negative_iterations_are_rejected():
    bad = copy.deepcopy(GOOD)
    bad["benchmarks"][0]["iterations"] = -5
    with pytest.raises(WorkflowError, match=r"-5 is less than the minimum of 1"):
        validated(bad)


def test_semantic_errors_name_the_key():
    bad = validated({**GOOD, "benchmarks": [{"dataset": "cifar10", "networks": ["lenet"]}]})
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].networks: lenet is not sized for cifar10; allowed for "
                                          r"cifar10: alexnet, resnet50, googlenet, vgg16"):
        cases(bad)
    bad = validated({**GOOD, "benchmarks": [{"dataset": "mnist", "networks": ["lenet"], "iterations": 10}]})
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].warmup_iterations: 10 warm-up iterations leave no timed"):
        cases(bad)

    bad = validated({**GOOD, "benchmarks": [{"dataset": "imagenet", "networks": ["alexnet"]}]})
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].data: real ImageNet needs ilsvrc12.directory .*"
                                          r"allowed: generated, synthetic"):
        cases(bad)
    assert cases({**bad, "ilsvrc12": {"directory": "/datasets/ILSVRC2012"}})


def test_bad_config_stops_snakemake_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**GOOD, "frameworks": ["pytorch", "theano"]}))
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(bad), "--directory",
                             str(tmp_path), "--snakefile", str(ROOT / "Snakefile")],
                            capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "'theano' is not one of" in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def alias_bomb(levels: int) -> str:
    """YAML whose k-th alias stands for 9**(k + 1) strings ("billion laughs")."""
    lines = ['laughs0: &laughs0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"laughs{k}: &laughs{k} [{', '.join([f'*laughs{k - 1}'] * 9)}]" for k in range(1, levels)]
    return "\n".join([*lines, f"frameworks: *laughs{levels - 1}", ""])


@pytest.mark.parametrize(("config", "message"), [
    (yaml.safe_load(alias_bomb(9)), f"laughs4: more than {MAX_CONFIG_VALUES:,} values"),
    ({**GOOD, "benchmarks": [{**GOOD["benchmarks"][0], "batch_size": list(range(1, 100_001))}]},
     f"benchmarks: more than {MAX_CONFIG_VALUES:,} values"),
    ({**GOOD, "devices": ["cpu", "2xcpu"], "precisions": ["fp32", "bf16"], "compile": [False, True],
      "benchmarks": [{**GOOD["benchmarks"][0], "batch_size": list(range(1, 2_001))}]},
     f"benchmarks: up to 16,000 cases .*; allowed: at most {MAX_CASES:,}"),
])
def test_a_config_too_large_to_mean_a_benchmark_is_refused_before_it_is_read_whole(config, message):
    with pytest.raises(ConfigError, match=message):
        check_size(config)


def test_an_alias_bomb_stops_snakemake_at_once(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb(9))  # 387 million strings once expanded: the schema's check never ended
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(bomb), "--directory",
                             str(tmp_path), "--snakefile", str(ROOT / "Snakefile")],
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode != 0
    assert f"invalid config: laughs4: more than {MAX_CONFIG_VALUES:,} values" in result.stdout + result.stderr


def test_kmnist_runs_lenet_with_mnist_parameters():
    config = validated({**GOOD, "benchmarks": [{"dataset": "kmnist", "data": "generated", "networks": ["lenet"]}]})
    (case,) = cases(config)
    assert case.dataset == "kmnist-generated" and (case.batch_size_global, case.iterations) == (64, 938)
    bad = validated({**GOOD, "benchmarks": [{"dataset": "kmnist", "networks": ["vgg16"]}]})
    with pytest.raises(ConfigError, match="vgg16 is not sized for kmnist; allowed for kmnist: lenet"):
        cases(bad)


def test_a_case_may_name_its_own_frameworks():
    config = validated({"frameworks": ["pytorch", "caffe"], "benchmarks": [
        {"dataset": "mnist", "data": "synthetic", "networks": ["lenet"]},
        {"dataset": "text", "data": "synthetic", "networks": ["lstm"], "frameworks": ["pytorch", "keras-jax"]}]})
    assert sorted((case.framework, case.network) for case in cases(config)) == [
        ("caffe", "lenet"), ("keras-jax", "lstm"), ("pytorch", "lenet"), ("pytorch", "lstm")]
    config["benchmarks"][1]["frameworks"] = ["pytorch", "theano"]
    with pytest.raises(WorkflowError, match=r"'theano' is not one of \['caffe', 'tensorflow'"):
        validated(config)


def test_an_inference_only_framework_has_no_training_cells_and_is_not_named_for_training():
    config = validated({"frameworks": ["pytorch", "onnxruntime"], "benchmarks": [
        {"dataset": "mnist", "data": "synthetic", "networks": ["lenet"], "tasks": ["train", "inference"]}]})
    assert sorted((case.framework, case.task) for case in cases(config)) == [
        ("onnxruntime", "inference"), ("pytorch", "inference"), ("pytorch", "train")]
    config["benchmarks"][0]["frameworks"] = ["onnxruntime"]
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].frameworks: onnxruntime runs inference only; "
                                          "this case's tasks: train, inference"):
        cases(config)


def test_text_has_synthetic_data_only_and_runs_the_lstm():
    (case,) = cases(validated({**GOOD, "benchmarks": [{"dataset": "text", "data": "synthetic", "networks": ["lstm"]}]}))
    assert (case.dataset, case.batch_size_global, case.iterations, case.learning_rate) == (
        "text-synthetic", 32, 100, 0.01)
    bad = validated({**GOOD, "benchmarks": [{"dataset": "text", "networks": ["lstm"]}]})
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].data: text has no real data; allowed: synthetic"):
        cases(bad)
    bad = validated({**GOOD, "benchmarks": [{"dataset": "text", "data": "synthetic", "networks": ["lenet"]}]})
    with pytest.raises(ConfigError, match="lenet is not sized for text; allowed for text: lstm"):
        cases(bad)


TWO_TARGETS = {**GOOD, "devices": ["cpu", "gpu1", "gpu2"], "benchmarks": [
    {"dataset": "mnist", "data": "synthetic", "networks": ["lenet"]},
    {"dataset": "imagenet", "data": "synthetic", "networks": ["alexnet"]}],
    "hardware": [{"name": "e5", "devices": ["cpu"], "datasets": ["mnist"], "slurm": {"partition": "cpu"}},
                 {"name": "p100", "devices": ["gpu1", "gpu2"], "thesis": "p100",
                  "slurm": {"partition": "gpu", "gpu_model": "p100"}}]}


def test_hardware_targets_run_their_devices_on_their_datasets():
    found = {(case.dataset, case.placement) for case in cases(validated(TWO_TARGETS))}
    assert found == {("mnist-synthetic", "e5@cpu"), ("mnist-synthetic", "p100@gpu1"), ("mnist-synthetic", "p100@gpu2"),
                     ("imagenet-synthetic", "p100@gpu1"), ("imagenet-synthetic", "p100@gpu2")}  # e5: MNIST only
    spec = next(c for c in cases(validated(TWO_TARGETS)) if c.placement == "e5@cpu").run_spec(1, 2, None, 0)
    assert spec.hardware == "e5" and spec.record_block(None)["hardware"] == "e5"
    # without targets: one unnamed target, the paths and records of the runs made before targets
    (case,) = cases(validated(GOOD))
    assert case.hardware is None and case.placement == "cpu"
    assert "hardware" not in case.run_spec(1, 2, None, 0).record_block(None)
    assert list(targets(validated(GOOD))) == [None]


@pytest.mark.parametrize("change,message", [
    ({"hardware": [{"name": "e5", "devices": ["gpu4"]}]},
     r"hardware\[0\]\.devices: gpu4 is not among the config's devices; allowed: cpu, gpu1, gpu2"),
    ({"hardware": [{"name": "e5", "devices": ["cpu"]}, {"name": "e5", "devices": ["gpu1"]}]},
     r"hardware\[1\]\.name: 'e5' names two targets"),
    ({"hardware": [{"name": "e5", "devices": ["cpu"], "thesis": "k20m"}]},
     r"hardware\[0\]\.thesis: the thesis's k20m columns are one and two GPUs in one process; this target's devices"),
    ({"hardware": [{"name": "e5", "devices": ["cpu"], "slurm": {"partition": "cpu", "qos": "long"}},
                   {"name": "k20", "devices": ["gpu1"], "slurm": {"partition": "gpu", "gpu_model": "k20m"}}]},
     r"hardware: e5 sets slurm\.qos and k20 does not; a Slurm option of one target is set for every target"),
])
def test_a_bad_hardware_target_is_named(change, message):
    with pytest.raises(ConfigError, match=message):
        cases(validated({**TWO_TARGETS, **change}))


def test_the_schema_knows_the_targets_slurm_options_and_thesis_gpus():
    schema = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())
    target = schema["properties"]["hardware"]["items"]["properties"]
    assert set(target["slurm"]["properties"]) == set(SLURM_RESOURCES)
    assert tuple(target["thesis"]["enum"]) == THESIS_GPUS
    assert target["datasets"]["items"] == schema["properties"]["benchmarks"]["items"]["properties"]["dataset"]
    with pytest.raises(WorkflowError, match="'a b' does not match"):
        validated({**TWO_TARGETS, "hardware": [{"name": "a b", "devices": ["cpu"]}]})
    # a target's own cores per job (the thesis's 12-core and 20-core CPUs): 0 on CPUs is all cores given
    assert validated({**TWO_TARGETS, "hardware": [{"name": "e5", "devices": ["cpu"], "threads": {"cpu": 0}}]})
    with pytest.raises(WorkflowError, match="0 is less than the minimum of 1"):
        validated({**TWO_TARGETS, "hardware": [{"name": "e5", "devices": ["gpu1"], "threads": {"gpu": 0}}]})


def test_a_records_run_block_gives_back_its_spec():
    spec = RunSpec("pytorch", "mnist-synthetic", "lenet", "cpu", 2, 64, 100, 10, 0.01, 2, task="inference",
                   latency_calls=50, hardware="node")
    assert RunSpec.from_record(spec.record_block("2.13.0")) == spec
    assert RunSpec.from_record({**spec.record_block("2.13.0"), "framework_version": "x", "data_mode": "y"}) == spec


# Each study's config, and its name in docs/studies.md's table of what still differs from each study
STUDY_CONFIGS = {"thesis.yaml": "thesis", "keras_benchmarks.yaml": "seed 001", "seed002.yaml": "seed 002",
                 "seed003.yaml": "seed 003", "seed004.yaml": "seed 004"}
DIFFERS = "# What still differs from the study (docs/studies.md's table, each row's key): "


@pytest.mark.parametrize("config,study", STUDY_CONFIGS.items())
def test_each_study_s_config_names_the_rows_of_the_studies_table_of_what_still_differs(config, study):
    """The config's comment and docs/studies.md's rows for its study name the same differences, each row once."""
    text = (ROOT / "config" / config).read_text()
    assert DIFFERS in text, f"config/{config} lacks its line {DIFFERS!r}"
    comment = text[text.index(DIFFERS) + len(DIFFERS):]
    lines = [comment.splitlines()[0]]
    lines += [line.removeprefix("#   ") for line in comment.splitlines()[1:] if line.startswith("#   ")][:5]
    named = [key.strip() for key in " ".join(lines).rstrip(".").split(", ")]
    rows = re.findall(rf"^\| {study} \| \*\*(.+?)\*\*: .+ \|.*\|$", (ROOT / "docs" / "studies.md").read_text(),
                      re.MULTILINE)
    assert rows and named == rows, f"config/{config} names {named}; docs/studies.md's rows for {study}: {rows}"
    assert len(set(rows)) == len(rows)


def test_releases_add_each_framework_s_registered_older_release_as_a_framework_of_its_own():
    """config releases: the thesis's CNTK 2.5.1 beside 2.7; a framework without one keeps today's alone (Caffe, whose
    1.0 is both, saying so), and a case whose frameworks have none of the releases asked for is refused, naming those
    that have."""
    config = {"frameworks": ["cntk", "caffe", "keras-jax"], "benchmarks": [
        {"dataset": "mnist", "data": "synthetic", "networks": ["lenet"]}]}
    frameworks = sorted({case.framework for case in cases(validated({**config, "releases": ["current", "thesis"]}))})
    assert frameworks == ["caffe", "cntk", "cntk-2.5", "keras-jax"]
    assert {case.framework for case in cases(validated(config))} == {"cntk", "caffe", "keras-jax"}  # today's by default
    assert {case.framework for case in cases(validated({**config, "releases": ["thesis"]}))} == {"cntk-2.5", "caffe"}
    assert without_releases(validated({**config, "releases": ["current", "thesis"]})) == (  # said before the first job
        f"caffe: {REGISTRY['caffe'].also_thesis}, one cell for both; "
        "no thesis release of keras-jax yet (no backend speaks it): today's alone runs")
    assert without_releases(validated(config)) == ""
    with pytest.raises(ConfigError, match=r"benchmarks\[0\]: none of its frameworks has a release of thesis "
                                          r"\(releases\); those that have: cntk"):
        cases(validated({**config, "frameworks": ["keras-jax"], "releases": ["thesis"]}))


@pytest.mark.parametrize("text,message", [
    ("repetitions: 1\nframeworks: [pytorch]\nrepetitions: 5\n", "key 'repetitions' is given twice, on lines 1 and 3"),
    ("benchmarks:\n- dataset: mnist\n  networks: [lenet]\n  dataset: cifar10\n",
     "key 'dataset' is given twice, on lines 2 and 4"),
])
def test_a_key_given_twice_in_a_config_file_is_refused_naming_both_lines(tmp_path, text, message):
    """PyYAML, as Snakemake reads a config file, keeps the last of two values silently."""
    path = tmp_path / "twice.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(f"{path}: {message}")):
        check_files([path])


def test_a_yte_template_is_refused_unless_the_user_asks_for_one(tmp_path, monkeypatch):
    path = tmp_path / "template.yaml"
    path.write_text("__use_yte__: true\nrepetitions: 1\n")
    monkeypatch.delenv(YTE_OPT_IN, raising=False)
    with pytest.raises(ConfigError, match=f"__use_yte__: true makes this config file a YTE template.*{YTE_OPT_IN}=1"):
        check_files([path])
    monkeypatch.setenv(YTE_OPT_IN, "1")
    check_files([path])


def test_every_config_the_project_ships_reads_strictly():
    check_files([*(ROOT / "config").glob("*.yaml"), *(ROOT / ".test").glob("*/config.yaml")])


def test_a_config_file_with_a_key_given_twice_stops_snakemake_before_any_job(tmp_path):
    twice = tmp_path / "twice.yaml"
    twice.write_text("repetitions: 1\n" + yaml.safe_dump(GOOD) + "repetitions: 5\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(twice), "--directory",
                             str(tmp_path), "--snakefile", str(ROOT / "Snakefile")],
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode != 0
    assert f"invalid config: {twice}: key 'repetitions' is given twice" in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("entry,message", [
    ({"dataset": "mnist", "data": "generated", "networks": ["lenet"], "batch_size": 512},
     ("benchmarks[0].batch_size: 512 is more than the 256 training images (generated.train_images); allowed: at "
      "most 256")),
    ({"dataset": "mnist", "data": "synthetic", "networks": ["lenet"], "batch_size": 10**9},
     ("benchmarks[0].batch_size: 1000000000 images of 1x28x28 are 2,920.6 GiB as fp32 before any layer, more than "
      "this node's 64.0 GiB of memory; allowed: at most 21,913,098")),
])
def test_a_batch_no_run_could_hold_is_refused_when_the_plan_is_made(entry, message, monkeypatch):
    from dlbench import config as dlbench_config

    monkeypatch.setattr(dlbench_config, "node_memory_bytes", lambda: 64 * 2**30)  # the node faked: 64 GiB
    with pytest.raises(ConfigError, match=re.escape(message)):
        cases(validated({**GOOD, "generated": {"train_images": 256, "test_images": 64}, "benchmarks": [entry]}))


def test_a_release_line_runs_the_releases_it_names_and_refuses_one_no_backend_speaks():
    from dlbench.config import check_releases

    line = {**GOOD, "frameworks": ["mxnet", "pytorch"], "releases": {"mxnet": ["1.6", "1.2"]}}
    assert sorted({case.framework for case in cases(validated(line))}) == ["mxnet-1.2", "mxnet-1.6", "pytorch"]
    with pytest.raises(ConfigError, match=r"releases.mxnet: 1.4 is a number to YAML \(1.10 would be 1.1\): quote "
                                          r"each version"):
        check_releases({**line, "releases": {"mxnet": [1.4]}})
    with pytest.raises(ConfigError, match=r"releases.mxnet: no backend speaks mxnet 1.3; its releases here: 1.2.0, "
                                          r"1.4.1, 1.6.0, 1.9.1"):
        check_releases({**line, "releases": {"mxnet": ["1.3"]}})
    with pytest.raises(ConfigError, match=r"releases.mxnet-1.2: a release line is named by today's framework"):
        check_releases({**line, "releases": {"mxnet-1.2": ["1.2"]}})


def test_the_named_line_thesis_to_today_passes_the_schema_and_another_name_is_refused():
    line = {**GOOD, "frameworks": ["mxnet", "pytorch"], "releases": "thesis-to-today"}
    assert without_releases(validated(line)) == ""
    assert sorted({case.framework for case in cases(validated(line))}) == [
        "mxnet", "mxnet-1.2", "mxnet-1.4", "mxnet-1.6", "pytorch", "pytorch-1.0"]
    with pytest.raises(WorkflowError, match="'thesis-to-tomorrow' is not valid"):
        validated({**line, "releases": "thesis-to-tomorrow"})
