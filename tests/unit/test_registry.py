"""Frameworks, networks and precisions are each named in one registry; the schemas and the docs must
agree with it.
(Add a dummy framework or network to a registry and these tests fail, naming what else to change.)"""
import dataclasses
import importlib.util
import re

import pytest
import yaml
from dlbench import envs, networks, registry
from dlbench.config import FIGURE_4_5
from dlbench.datasets import FAMILIES
from dlbench.metrics import METRICS
from dlbench.spec import PRECISIONS, RunSpec
from dlbench.tasks import TASKS

from ..conftest import ROOT

CONFIG_SCHEMA = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())["properties"]
RECORD = yaml.safe_load((ROOT / "workflow" / "schemas" / "run_record.schema.yaml").read_text())["properties"]
RECORD_RUN = RECORD["run"]["properties"]


def test_the_config_schema_allows_exactly_the_registered_frameworks_networks_and_datasets():
    assert CONFIG_SCHEMA["frameworks"]["items"]["enum"] == list(registry.REGISTRY)
    case = CONFIG_SCHEMA["benchmarks"]["items"]["properties"]
    assert case["networks"]["items"]["enum"] == list(networks.REGISTRY)
    assert case["frameworks"]["items"]["enum"] == list(registry.REGISTRY)
    assert case["dataset"]["enum"] == list(FAMILIES)


def test_the_run_record_schema_names_exactly_the_registered_frameworks_and_networks():
    assert RECORD_RUN["framework"]["enum"] == list(registry.REGISTRY)
    assert RECORD_RUN["network"]["enum"] == list(networks.REGISTRY)


def test_both_schemas_allow_exactly_the_registered_precisions_and_each_framework_names_its_own():
    assert CONFIG_SCHEMA["precisions"]["items"]["enum"] == list(PRECISIONS)
    assert RECORD_RUN["precision"]["enum"] == RECORD["execution"]["properties"]["precision"]["enum"] == list(PRECISIONS)
    for framework in registry.REGISTRY.values():
        assert set(framework.cpu_precisions) <= set(PRECISIONS) - {"tf32"}, framework
        assert set(framework.gpu_precisions) <= set(PRECISIONS), framework
        assert not (framework.compiler and framework.always_compiled == framework.compiler), framework


def test_each_run_parameter_is_the_record_schemas_and_the_config_sets_it_as_the_run_spec_defaults_it():
    """A RunSpec field is in the record's run block (but the data's directory and the seed, which the record leaves
    out); where a case of the config sets it, the config schema's default is the RunSpec's, and where both schemas
    bound it, they bound it alike (add a run parameter and this names the schema that lacks it)."""
    fields = {field.name: field for field in dataclasses.fields(RunSpec)}
    assert set(fields) - {"data_dir", "seed"} <= set(RECORD_RUN), "run_record.schema.yaml's run block"
    assert set(RECORD_RUN) - set(fields) == {"framework_version", "data_mode"}  # what the record adds
    case = CONFIG_SCHEMA["benchmarks"]["items"]["properties"]
    shared = set(fields) & set(case)
    assert {"epochs", "latency_calls", "target_accuracy", "iterations", "warmup_iterations"} <= shared
    for name in shared:
        if "default" in case[name] and fields[name].default is not dataclasses.MISSING:
            assert case[name]["default"] == fields[name].default, name
        for bound in ("minimum", "maximum", "exclusiveMinimum", "enum"):
            if bound in case[name] and bound in RECORD_RUN[name]:
                assert case[name][bound] == RECORD_RUN[name][bound], (name, bound)


def test_every_metric_reads_a_field_the_record_schema_names():
    for name, metric in METRICS.items():
        assert metric.field in RECORD[metric.section]["properties"], (name, metric.section, metric.field)
        assert set(metric.tasks) <= set(TASKS), name


def test_every_registered_framework_has_its_backend_and_environments():
    for framework in registry.REGISTRY.values():
        assert importlib.util.find_spec(f"dlbench.backends.{framework.module}"), framework
        for suffix in (".requirements.txt", ".yaml"):
            assert (ROOT / "envs" / f"{framework.environment}{suffix}").exists(), (framework, suffix)
        # a framework on an older CPython has its worker script, and only such a one
        assert bool(framework.worker) == (framework.environment in envs.WORKER_PYTHONS), framework
        assert not framework.worker or (ROOT / "workflow" / "scripts" / "workers" / framework.worker).exists()


def test_the_documented_framework_table_is_the_framework_registry():
    assert registry.registry_table() in (ROOT / "docs" / "environments.md").read_text(), (
        "docs/environments.md's framework table differs from the registry; it should read:\n"
        + registry.registry_table())


def test_the_documented_figure_4_5_is_the_network_registry():
    """config/README.md's table of the thesis's Figure 4.5: every network, every value, as registered."""
    text = (ROOT / "config" / "README.md").read_text().split("Figure 4.5 of the thesis (the defaults):")[1]
    documented = {}
    for family, names, batch, iterations, rate in re.findall(
            r"^\| (\w+) \| ([\w, ]+) \| (\d+) \| (\d+) \| ([\d.]+) \|$", text, flags=re.MULTILINE):
        for name in names.split(", "):
            documented[(family.lower(), name.lower())] = (int(batch), int(iterations), float(rate))
    # the families a variant is named for; the others (KMNIST, mnist10k) take MNIST's
    registered = {key: value for key, value in FIGURE_4_5.items() if FAMILIES[key[0]].sized_for == key[0]}
    assert documented == registered


def test_both_schemas_allow_exactly_the_registered_tasks():
    assert CONFIG_SCHEMA["benchmarks"]["items"]["properties"]["tasks"]["items"]["enum"] == list(TASKS)
    assert RECORD_RUN["task"]["enum"] == list(TASKS)


def test_a_backend_whose_trainer_lacks_a_task_it_claims_is_refused_when_loaded():
    """The contract per task: a framework's harness has each method of every task its registry row runs."""
    from dlbench.backends import check_harness, pytorch

    check_harness("pytorch", pytorch.Harness)  # the real one runs all four
    without_evaluation = type("WithoutEvaluation", (), {"inference": None, "INFERENCE_IDIOM": "model(x)",
                                                        "step": None, "final_loss": None, "layer_profiler": None})
    with pytest.raises(TypeError, match=r"pytorch's Harness cannot run accuracy: no test_logits \(implement them, "
                                        r"or name accuracy in its registry row's not_yet"):
        check_harness("pytorch", without_evaluation)
    inference_only = type("InferenceOnly", (), {"inference": None, "INFERENCE_IDIOM": "model(x)"})
    check_harness("onnxruntime", inference_only)  # its row runs inference only: no training step to stub out
    with pytest.raises(TypeError, match=r"pytorch's Harness cannot run train: no step, final_loss"):
        check_harness("pytorch", inference_only)


def test_every_registered_framework_runs_each_of_its_tasks_on_cpu_in_the_end_to_end_config():
    """The contract, end to end: tests/workflow/test_workflow.py runs .test/config-tiny (and test_releases.py
    .test/config-releases, the seeds' releases) for real on CPUs, each framework's every task (a task its backend
    does not run yet, and cuDNN's calls on a CPU, recorded unavailable with why). A framework or task added to the
    registry alone is missing here, by name."""
    from dlbench.plan import Plan

    from ..conftest import validated

    covered = set()
    for config in ("config-tiny", "config-releases"):  # today's releases; the seeds' and those between them
        plan = Plan(validated(yaml.safe_load((ROOT / ".test" / config / "config.yaml").read_text())))
        covered |= {(case.framework, case.task) for case in plan.cases.values() if case.device == "cpu"}
    missing = [f"{name} {task}" for name, framework in registry.REGISTRY.items() for task in framework.tasks
               if (name, task) not in covered]
    assert not missing, f"not in .test/config-tiny or config-releases: {', '.join(missing)}"


# Releases whose environment pins no version of them, and why
UNPINNED = {"caffe": "built from source (brocolli-caffe's Caffe 1.0 tree)",
            "keras-tensorflow": "Keras 3 comes with TensorFlow 2.21: its major release alone is known"}


def test_each_release_s_version_is_the_one_its_environment_installs():
    """The version a release line names a release by is its environment's pin (but :data:`UNPINNED`)."""
    for framework in registry.REGISTRY.values():
        if framework.version and framework.name not in UNPINNED:
            pins = (ROOT / "envs" / f"{framework.environment}.requirements.txt").read_text()
            assert re.search(rf"^[\w.-]+=={re.escape(framework.version)}\b", pins, re.MULTILINE), framework.name


def test_a_release_line_is_each_framework_s_releases_oldest_first():
    assert [entry.name for entry in registry.release_line("mxnet")] == ["mxnet-1.2", "mxnet-1.4", "mxnet-1.6", "mxnet"]
    assert [entry.name for entry in registry.release_line("tensorflow")] == [
        "tensorflow-1.9", "tensorflow-2.16", "tensorflow-2.18", "tensorflow"]
    assert registry.release_named("mxnet", "1.4").version == "1.4.1"
    assert registry.release_named("mxnet", "1") is registry.REGISTRY["mxnet-1.2"]  # the oldest it begins
    assert registry.release_named("mxnet", "1.40") is None and registry.release_named("pytorch", "1.4") is None
    assert registry.with_releases(["mxnet", "pytorch"], {"mxnet": ["1.9", "1.2"]}) == ["mxnet-1.2", "mxnet", "pytorch"]


def test_the_named_line_thesis_to_today_runs_each_framework_at_every_release_a_backend_speaks():
    assert registry.with_releases(["tensorflow", "caffe", "cudnn", "keras2-mxnet"], registry.THESIS_TO_TODAY) == [
        "tensorflow-1.9", "tensorflow-2.16", "tensorflow-2.18", "tensorflow", "caffe", "cudnn", "keras2-mxnet"]
