"""What a record's fingerprints follow: the code that ran it, in the job's process, the runner's and its worker, by
what the code does (its statements), not by its comments or docstrings."""
import ast
import dataclasses
import shutil

import pytest
from dlbench.record import currency
from dlbench.spec import RunSpec

FRAMEWORKS = ("cntk", "mxnet-1.2", "pytorch")
UNCHANGED = {framework: [] for framework in FRAMEWORKS}


def _spec(framework: str) -> RunSpec:
    return RunSpec(framework=framework, dataset="mnist-synthetic", network="lenet", device="cpu", repetition=1,
                   batch_size_global=16, iterations=4, warmup_iterations=1, learning_rate=0.01, threads=1)


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A copy of the package whose modules a test edits, the fingerprints taken of it."""
    shutil.copytree(currency.PACKAGE_ROOT, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    for name, place in (("PACKAGE", tmp_path / "dlbench"), ("WORKERS", tmp_path / "workers"),
                        ("HARNESS", tuple(tmp_path / "dlbench" / "run" / name for name in ("monitor.py", "runner.py"))),
                        ("REGISTRY_MODULE", tmp_path / "dlbench" / "registry.py")):
        monkeypatch.setattr(currency, name, place)
    currency._code_fingerprint.cache_clear()
    currency._imports.cache_clear()
    yield tmp_path
    currency._code_fingerprint.cache_clear()
    currency._imports.cache_clear()


def _fingerprints() -> dict[str, dict[str, str]]:
    currency._code_fingerprint.cache_clear()
    return {framework: currency.fingerprints(_spec(framework)) for framework in FRAMEWORKS}


def _changed(before, after) -> dict[str, list[str]]:
    """Per framework, which fingerprints differ."""
    return {framework: sorted(what for what in before[framework] if before[framework][what] != after[framework][what])
            for framework in before}


def test_a_worker_s_script_and_its_protocol_are_part_of_its_framework_s_backend_fingerprint(package):
    before = _fingerprints()
    mxnet_worker = package / "workers" / "mxnet_worker.py"
    mxnet_worker.write_text(mxnet_worker.read_text() + "\nEDITED = True\n")
    after_worker = _fingerprints()
    assert _changed(before, after_worker) == {"cntk": [], "mxnet-1.2": ["backend"], "pytorch": []}
    protocol = package / "workers" / "worker_protocol.py"
    protocol.write_text(protocol.read_text() + "\nEDITED = True\n")
    assert _changed(after_worker, _fingerprints()) == {"cntk": ["backend"], "mxnet-1.2": ["backend"], "pytorch": []}


@pytest.mark.parametrize("module,old,new,changed", [
    # the record's images/s, two imports away from the monitor: the harness's
    ("record/build.py", '"images_per_second_mean": images / window["seconds"]',
     '"images_per_second_mean": 2 * images / window["seconds"]', ["harness"]),
    # the sampler, which the monitor's host module runs: the harness's
    ("hardware/sampler.py", "    def run(self) -> None:\n", "    def run(self) -> None:\n        EDITED = 1\n",
     ["harness"]),
    # the input clock and whole_update, which every backend and the runner import: every framework's
    ("backends/__init__.py", "def whole_update(", "EDITED = 1\n\n\ndef whole_update(", ["backend", "harness"]),
    # a task's window marks, which the train task and the harness import, and the backends of this process (not a
    # worker's: the worker's own loop marks its window)
    ("tasks/window_marks.py", "\ndef ", "\nEDITED = 1\n\n\ndef ",
     {"cntk": ["harness", "task"], "mxnet-1.2": ["harness", "task"], "pytorch": ["backend", "harness", "task"]}),
])
def test_a_behaviour_edit_anywhere_a_run_imports_changes_its_fingerprints(package, module, old, new, changed):
    before = _fingerprints()
    path = package / "dlbench" / module
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    assert _changed(before, _fingerprints()) == (changed if isinstance(changed, dict) else
                                                 dict.fromkeys(FRAMEWORKS, changed))


def test_a_comment_or_a_docstring_changes_no_fingerprint(package):
    before = _fingerprints()
    for module in ("tasks/train.py", "record/build.py", "backends/pytorch.py", "hardware/sampler.py"):
        path = package / "dlbench" / module
        text = path.read_text()
        tree = ast.parse(text)
        documented = [node for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node)]
        for docstring in (ast.get_docstring(node, clean=False) for node in documented[:2]):  # the module's, one more
            first_line = docstring.splitlines()[0]
            text = text.replace(first_line, f"Edited. {first_line}", 1)
        path.write_text("# a comment\n" + text.replace(":\n", ":  # another comment\n", 1))
    assert _changed(before, _fingerprints()) == UNCHANGED


def test_another_framework_s_entry_or_backend_changes_none_of_a_framework_s_fingerprints(package):
    before = _fingerprints()
    registry = package / "dlbench" / "registry.py"
    registry.write_text(registry.read_text().replace('always_compiled="Caffe\'s static net"',
                                                       'always_compiled="Caffe\'s static net, edited"', 1))
    mxnet = package / "dlbench" / "backends" / "mxnet.py"
    mxnet.write_text(mxnet.read_text() + "\nEDITED = True\n")
    assert _changed(before, _fingerprints()) == UNCHANGED


def test_a_record_names_the_data_it_read_and_data_converted_again_to_other_files_makes_it_stale(tmp_path):
    """The data's identity is its conversion's files (their recorded digests): the same images converted again, or
    the conversion's record rewritten, keep it; another generated set in its place (a copied results directory
    beside other data, Snakemake's metadata lost) changes it, and the record is then not current."""
    from dlbench import datasets, formats

    def converted(seed: int):
        datasets.generate("mnist", tmp_path / "raw", train_images=40, test_images=10, seed=seed)
        datasets.unpack("mnist", tmp_path / "raw", tmp_path / "data")
        formats.convert("lmdb", "mnist", tmp_path / "data", tmp_path / "lmdb", seed=7, log=lambda line: None)

    spec = dataclasses.replace(_spec("pytorch"), dataset="mnist-generated", data_dir=str(tmp_path / "lmdb"))
    assert currency.data_identity(spec) is None  # not converted yet: its conversion runs first, then the run
    converted(seed=1)
    asked = currency.expected(spec)
    record = {"run": asked["run"], "provenance": {"fingerprints": asked["fingerprints"],
                                                  "data_sha256": asked["data"]}}
    assert asked["data"] and currency.staleness(record, asked) is None
    converted(seed=1)
    assert currency.staleness(record, currency.expected(spec)) is None
    converted(seed=2)
    assert currency.staleness(record, currency.expected(spec)) == "the data it read was converted again, to other files"
    del record["provenance"]["data_sha256"]  # a record of an older dlbench
    assert currency.staleness(record, currency.expected(spec)) == "no data identity"
