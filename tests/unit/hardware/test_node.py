"""Which node this is, from the NVIDIA driver's files alone (dlbench.hardware.node)."""
from dlbench.hardware import node


def driver_files(root, version: str, gpus: dict[str, str]):
    root.mkdir(parents=True, exist_ok=True)
    (root / "version").write_text(f"{version}\nGCC version:  gcc version 12.2.0\n")
    for bus, model in gpus.items():
        (root / "gpus" / bus).mkdir(parents=True)
        (root / "gpus" / bus / "information").write_text(
            f"Model: \t\t {model}\nIRQ:   \t\t 120\nGPU UUID: \t GPU-????????\nBus Location: \t {bus}\n")


def test_a_node_is_its_host_its_driver_and_each_gpus_model_at_its_bus(tmp_path):
    driver_files(tmp_path / "a", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06", {
        "0000:3b:00.0": "NVIDIA H100 80GB HBM3", "0000:18:00.0": "NVIDIA H100 80GB HBM3"})
    found = node.identity(tmp_path / "a")
    assert found["driver"].endswith("580.65.06")
    assert found["gpus"] == ["NVIDIA H100 80GB HBM3 at 0000:18:00.0", "NVIDIA H100 80GB HBM3 at 0000:3b:00.0"]
    # another driver, or a GPU fewer, is another node: its ceilings and facts are measured again
    driver_files(tmp_path / "b", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20", {
        "0000:3b:00.0": "NVIDIA H100 80GB HBM3", "0000:18:00.0": "NVIDIA H100 80GB HBM3"})
    driver_files(tmp_path / "c", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06", {
        "0000:18:00.0": "NVIDIA H100 80GB HBM3"})
    keys = {node.key(node.identity(tmp_path / name)) for name in "abc"}
    assert len(keys) == 3 and all(key.startswith(found["host"] + "-") for key in keys)
    assert node.key(node.identity(tmp_path / "a")) == node.key(found)


def test_without_a_driver_a_node_is_its_host_alone(tmp_path):
    assert node.identity(tmp_path / "absent") | {"host": None} == {"host": None, "driver": None, "gpus": []}
