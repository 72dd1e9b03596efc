"""Several results directories as one result set (config merge): what is refused, and what is read."""
import pytest
from dlbench.record.io import write_record
from dlbench.tables.merge import MergeError, case_of, merged_records

from .test_tables import on_gpus, on_target, record


def results_dir(root, *items):
    """A results directory holding ``items`` where the workflow writes them (their placement's path)."""
    for item in items:
        run = item["run"]
        placement = f"{run['hardware']}@{run['device']}" if run.get("hardware") else run["device"]
        write_record(item, root / "runs" / run["framework"] / run["dataset"] / run["network"] / placement / "fp32"
                     / run["task"] / f"rep{run['repetition']}.json")
    return str(root)


def on_cpu(item, model):
    item["provenance"]["cpu_model"] = model
    return item


def test_two_machines_without_named_targets_are_merged_whole(tmp_path):
    laptop = results_dir(tmp_path / "laptop", *(on_cpu(record(repetition=r), "Laptop CPU") for r in (1, 2)))
    node = results_dir(tmp_path / "node", *(on_cpu(record(repetition=r), "Server CPU") for r in (1, 2)),
                       on_gpus(record(device="gpu1"), "NVIDIA H100 80GB HBM3"))
    found = merged_records([laptop, node])
    assert len(found) == 5 and all(path.is_absolute() for path in found)
    assert {case_of(r).placement for r in found.values()} == {"cpu", "gpu1"}
    assert {r["provenance"]["cpu_model"] for r in found.values() if r["run"]["device"] == "cpu"} == {
        "Laptop CPU", "Server CPU"}


def test_one_target_name_for_two_machines_is_refused(tmp_path):
    a = results_dir(tmp_path / "a", on_target(on_gpus(record(device="gpu1"), "Tesla P100-PCIE-16GB"), "p100"))
    b = results_dir(tmp_path / "b", on_target(on_gpus(record(device="gpu1"), "NVIDIA H100 80GB HBM3"), "p100"))
    with pytest.raises(MergeError, match=r"hardware target 'p100' is two machines \(gpu runs: .*a: Tesla P100-PCIE-"
                                         r"16GB; .*b: NVIDIA H100 80GB HBM3\); one column, one machine"):
        merged_records([a, b])
    # the same target's CPU and GPU runs are two identities of one node, not a conflict
    c = results_dir(tmp_path / "c", on_target(record(device="cpu"), "p100"))
    assert len(merged_records([a, c])) == 2


def test_one_run_twice_and_directories_without_runs_are_refused(tmp_path):
    a = results_dir(tmp_path / "a", record())
    b = results_dir(tmp_path / "b", record())
    with pytest.raises(MergeError, match="are one run twice"):
        merged_records([a, b])
    with pytest.raises(MergeError, match="a directory is listed twice"):
        merged_records([a, str(tmp_path / "a" / ".")])
    (tmp_path / "empty" / "runs").mkdir(parents=True)
    with pytest.raises(MergeError, match="holds no run records"):
        merged_records([a, str(tmp_path / "empty")])
    with pytest.raises(MergeError, match="holds no runs"):
        merged_records([str(tmp_path / "nowhere")])


def test_a_damaged_record_is_left_out_and_named(tmp_path):
    a = results_dir(tmp_path / "a", record(repetition=1), record(repetition=2))
    damaged = next((tmp_path / "a").rglob("rep2.json"))
    damaged.write_text(damaged.read_text()[:100])
    said = []
    assert len(merged_records([a], log=said.append)) == 1
    assert said and "left out" in said[0] and "rep2.json" in said[0]
