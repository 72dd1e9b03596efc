"""The workflow's plan, computed from a config without Snakemake: the records, the figures and the run specs."""
import os
import re

import yaml
from dlbench.plan import RUN_RECORD, NodeFacts, Plan, case_key

from ..conftest import ROOT, validated

NO_NODE = NodeFacts(rapl=False, cpu_peak=False, idle_gpus=False)
CPU_AND_GPUS = {"frameworks": ["pytorch", "mxnet"], "devices": ["cpu", "gpu1", "gpu2"], "repetitions": 2,
                "benchmarks": [{"dataset": "mnist", "data": "synthetic", "networks": ["lenet"],
                                "tasks": ["train", "inference"]}]}


def test_each_case_has_a_record_per_repetition_where_its_wildcards_say():
    plan = Plan(validated(CPU_AND_GPUS))
    assert len(plan.cases) == 2 * 3 * 2  # frameworks x devices x tasks
    records = plan.records()
    assert len(records) == len(set(records)) == 2 * len(plan.cases)
    for key, case in plan.cases.items():
        assert key == case_key(case)
        for repetition, path in enumerate(plan.records([key]), 1):
            fields = dict(zip(("framework", "dataset", "network", "placement", "variant", "task"), key))
            assert path == RUN_RECORD.format(**fields, repetition=repetition)
    assert set(plan.records_of("mnist-synthetic", "lenet", ("inference",))) == {
        path for key, case in plan.cases.items() if case.task == "inference" for path in plan.records([key])}


def test_the_figures_drawn_follow_what_the_node_can_measure():
    cpu_only = Plan(validated({**CPU_AND_GPUS, "devices": ["cpu"]}))
    figures = cpu_only.figures(NO_NODE)
    assert "results/figures/mnist-synthetic/lenet/train_speed.png" in figures
    assert not any("cpu_energy" in path or "gpu_power" in path or "/mfu." in path for path in figures)
    measured = cpu_only.figures(NodeFacts(rapl=True, cpu_peak=True, idle_gpus=False))
    assert {"results/figures/mnist-synthetic/lenet/cpu_energy_per_image.svg",
            "results/figures/mnist-synthetic/lenet/mfu.svg"} <= set(measured)
    assert "results/figures/mnist-synthetic/cpu_energy_per_image_heatmap.png" in cpu_only.heatmaps(
        NodeFacts(rapl=True, cpu_peak=False, idle_gpus=False))
    # GPU runs: their power is measured by NVML, whatever the node's RAPL says
    assert "results/figures/mnist-synthetic/lenet/gpu_power.png" in Plan(validated(CPU_AND_GPUS)).figures(NO_NODE)


def test_each_task_s_tables_and_figures_are_asked_for_where_the_config_has_its_cases():
    plan = Plan(validated({**CPU_AND_GPUS, "benchmarks": [
        {"dataset": "mnist", "data": "synthetic", "networks": ["lenet"], "tasks": ["train", "inference"]},
        {"dataset": "cifar10", "data": "synthetic", "networks": ["alexnet"], "tasks": ["profile"]}]}))
    targets = plan.task_targets()
    assert "results/tables/layers.csv" in targets and "results/tables/accuracy.csv" not in targets
    assert {path for path in targets if path.startswith("results/figures/")} == {
        f"results/figures/{cell}/{figure}.{ext}" for cell, figure in [
            ("mnist-synthetic/lenet", "iteration_times"), ("cifar10-synthetic/alexnet", "layers"),
            ("cifar10-synthetic/alexnet", "layer_steps"), ("cifar10-synthetic/alexnet", "layer_phases")]
        for ext in ("png", "svg")}


def test_speed_ups_are_set_against_one_device_of_the_same_framework_and_numerics():
    plan = Plan(validated(CPU_AND_GPUS))
    trained = {(c.framework, c.device): c for c in plan.trained}
    assert plan.set_against(trained["pytorch", "gpu2"]) == [trained["pytorch", "gpu1"]]
    assert plan.set_against(trained["mxnet", "gpu1"]) == [trained["mxnet", "cpu"]]
    assert plan.set_against(trained["mxnet", "cpu"]) == []
    assert plan.scaling() == ["results/figures/mnist-synthetic/scaling.png",
                              "results/figures/mnist-synthetic/scaling.svg"]
    assert Plan(validated({**CPU_AND_GPUS, "devices": ["cpu"]})).scaling() == []


def test_a_jobs_threads_are_its_targets_else_the_configs_capped_as_snakemake_caps_them():
    hardware = [{"name": "big", "devices": ["cpu"], "threads": {"cpu": 12}}, {"name": "small", "devices": ["cpu"]}]
    plan = Plan(validated({**CPU_AND_GPUS, "devices": ["cpu"], "hardware": hardware, "threads": {"cpu": 4}}))
    assert plan.threads("cpu", "big", []) == 12 and plan.threads("cpu", "small", []) == 4
    assert plan.threads("cpu", "big", [16, 8]) == 8  # --max-threads 16, --cores 8
    every_core = Plan(validated({**CPU_AND_GPUS, "threads": {"cpu": 0}}))
    assert every_core.threads("cpu", None, [6]) == 6 and every_core.threads("cpu", None, []) == os.cpu_count()
    assert every_core.loader_workers("cpu", 6) == 0 and every_core.loader_workers("gpu1", 6) == 6
    assert Plan(validated({**CPU_AND_GPUS, "loader_workers": 3})).loader_workers("gpu1", 6) == 3


def test_a_runs_spec_is_plain_data_that_a_changed_setting_changes():
    plan = Plan(validated(CPU_AND_GPUS))
    key = next(key for key, case in plan.cases.items() if case.device == "cpu" and case.task == "train")
    spec = plan.run_spec(key, 2, [2], None)
    assert yaml.safe_load(yaml.safe_dump(spec)) == spec  # what Snakemake can store as a params value
    assert spec["repetition"] == 2 and spec["threads"] == 2 and spec["data_dir"] is None
    assert "hardware" not in spec and "batch_swept" not in spec  # as the runs made before targets and batch lists
    slower = Plan(validated({**CPU_AND_GPUS, "benchmarks": [{**CPU_AND_GPUS["benchmarks"][0], "learning_rate": 0.5}]}))
    assert slower.run_spec(key, 2, [2], None) == {**spec, "learning_rate": 0.5}
    targeted = Plan(validated({**CPU_AND_GPUS, "hardware": [{"name": "node", "devices": ["cpu"]}]}))
    (target_key,) = [key for key, case in targeted.cases.items() if case_key(case)[3] == "node@cpu"
                     and case.framework == "pytorch" and case.task == "train"]
    assert targeted.run_spec(target_key, 1, [], None)["hardware"] == "node"


def test_a_class_subset_is_converted_in_shards_in_proportion_to_its_classes():
    config = validated({"frameworks": ["pytorch"], "benchmarks": [{"dataset": "imagenet", "data": "generated",
                                                                  "networks": ["alexnet"], "classes": 2}],
                        "generated": {"imagenet": {"classes": 4, "train_shards": 4, "test_shards": 2}}})
    plan = Plan(config)
    (label,) = {case.dataset for case in plan.cases.values()}
    assert plan.shard_counts(label) == {"train": 2, "test": 1}
    assert plan.shard_counts("imagenet-generated") == {"train": 4, "test": 2}
    assert plan.class_subsets == {label: 2}


def test_merged_records_are_the_matrix_and_say_what_their_nodes_measured(tmp_path):
    plan = Plan(validated(CPU_AND_GPUS))
    key = next(iter(plan.cases))
    record = {"run": {**plan.run_spec(key, 1, [2], None), "hardware": "p100"},
              "power": {"cpu_energy_j": 3.0}, "compute": {"mfu": None}}
    merged = Plan(validated({**CPU_AND_GPUS, "merge": [str(tmp_path)]}), {tmp_path / "rep1.json": record})
    assert list(merged.case_records.values()) == [[str(tmp_path / "rep1.json")]]
    assert merged.hardware_order == ["p100"] and merged.class_subsets == {}
    assert merged.node_facts(None) == NodeFacts(rapl=True, cpu_peak=False, idle_gpus=False)


def test_the_default_config_plans_every_thesis_framework_three_times():
    config = validated(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    plan = Plan(config)
    assert {"caffe", "tensorflow", "pytorch", "mxnet", "cntk"} <= {case.framework for case in plan.cases.values()}
    assert len(plan.records()) == 3 * len(plan.cases)


def test_the_workflow_s_files_import_the_plan_alone_and_name_only_what_it_offers():
    """rules/*.smk and the Snakefile wire files: what they need of the package is the plan's (``__all__``)."""
    from dlbench import plan as plan_module

    offered = set(plan_module.__all__)
    assert all(hasattr(plan_module, name) for name in offered)
    for path in [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]:
        text = path.read_text()
        imports = re.findall(r"^\s*(?:from\s+(dlbench\S*)\s+import|import\s+(dlbench\S*))", text, re.MULTILINE)
        assert {module or imported for module, imported in imports} <= {"dlbench", "dlbench.plan"}, path
        assert re.findall(r"^\s*from dlbench import (.+)$", text, re.MULTILINE) in ([], ["plan  # noqa: E402"]), path
        named = set(re.findall(r"(?<![\w.])plan\.(\w+)", text))
        listed = re.search(r"from dlbench\.plan import \(([^)]*)\)", text)
        named |= set(re.findall(r"\w+", re.sub(r"#.*", "", listed.group(1)))) if listed else set()
        assert named <= offered, (path, named - offered)


def test_the_release_lines_are_asked_for_where_a_framework_runs_at_two_releases():
    assert Plan(validated(CPU_AND_GPUS)).release_lines() == []
    releases = Plan(validated({**CPU_AND_GPUS, "devices": ["cpu"], "releases": ["current", "thesis"]}))
    assert {case.framework for case in releases.cases.values()} == {"pytorch", "pytorch-1.0", "mxnet", "mxnet-1.2"}
    assert releases.release_lines() == ["results/tables/release_lines.csv", "results/tables/regressions.md",
                                        "results/figures/release_lines.png", "results/figures/release_lines.svg"]


def test_the_release_lines_config_has_an_environment_per_release_on_the_cpython_it_needs():
    from dlbench import envs, registry
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    update_config(config, yaml.safe_load((ROOT / "config" / "release_lines.yaml").read_text()))
    frameworks = {case.framework for case in Plan(validated(config)).cases.values()}
    environments = {registry.ENVIRONMENTS[name] for name in frameworks}
    assert len(environments) == len(frameworks) == 12
    assert {name for name in environments if name in envs.WORKER_PYTHONS} == {
        "cntk", "cntk-2.5", "mxnet-1.2", "mxnet-1.4", "mxnet-1.6", "tensorflow-1.9", "pytorch-1.0"}
    assert {envs.WORKER_PYTHONS[name][0] for name in environments if name in envs.WORKER_PYTHONS} == {"3.6"}
    # its line per framework is each one's whole line: the named line thesis-to-today plans the same runs
    named = Plan(validated({**config, "releases": registry.THESIS_TO_TODAY}))
    assert {case.framework for case in named.cases.values()} == frameworks
