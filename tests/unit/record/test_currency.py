"""What a record's fingerprints follow: the code that ran it, in the runner's process and in its worker."""
import shutil

from dlbench.record import currency
from dlbench.spec import RunSpec


def _spec(framework: str) -> RunSpec:
    return RunSpec(framework=framework, dataset="mnist-synthetic", network="lenet", device="cpu", repetition=1,
                   batch_size_global=16, iterations=4, warmup_iterations=1, learning_rate=0.01, threads=1)


def test_a_worker_s_script_and_its_protocol_are_part_of_its_framework_s_backend_fingerprint(tmp_path, monkeypatch):
    shutil.copytree(currency.PACKAGE_ROOT, tmp_path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(currency, "PACKAGE", tmp_path / "dlbench")
    monkeypatch.setattr(currency, "WORKERS", tmp_path / "workers")
    frameworks = ("cntk", "mxnet-1.2", "pytorch")

    def backends() -> dict[str, str]:
        currency._code_fingerprint.cache_clear()
        return {framework: currency.fingerprints(_spec(framework))["backend"] for framework in frameworks}

    before = backends()
    mxnet_worker = tmp_path / "workers" / "mxnet_worker.py"
    mxnet_worker.write_text(mxnet_worker.read_text() + "\n# edited\n")
    after_worker = backends()
    assert [after_worker[name] != before[name] for name in frameworks] == [False, True, False]
    protocol = tmp_path / "workers" / "worker_protocol.py"
    protocol.write_text(protocol.read_text() + "\n# edited\n")
    after_protocol = backends()
    assert [after_protocol[name] != after_worker[name] for name in frameworks] == [True, True, False]
    currency._code_fingerprint.cache_clear()
