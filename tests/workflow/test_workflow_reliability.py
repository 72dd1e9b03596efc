"""The workflow when things go wrong, as a user meets it: a dataset that cannot be fetched still gives
records and tables, a user's archive is kept, a changed setting reruns exactly the runs it changes and
settings that change no measurement rerun nothing, and the run ends with a summary of ok / failed /
unavailable runs."""
import copy
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from dlbench import plan
from dlbench.record import currency
from dlbench.spec import RunSpec

from ..conftest import ROOT, svg_text

QUICK = {"networks": ["lenet"], "batch_size": 16, "iterations": 12, "warmup_iterations": 2}


def snakemake(workdir, *args, env=None):
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory",
               str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=900, env=env)


@pytest.fixture(scope="module")
def unfetchable(tmp_path_factory):
    """Real MNIST from an empty mirror, one archive put in data/raw/mnist by hand (not MNIST's bytes),
    beside a synthetic case that runs."""
    workdir = tmp_path_factory.mktemp("unfetchable")
    (workdir / "empty-mirror").mkdir()
    config = {"frameworks": ["pytorch"], "repetitions": 1, "environment": "current",
              "mirrors": {"mnist": [(workdir / "empty-mirror").as_uri()]},
              "benchmarks": [{"dataset": "mnist", "data": "real", **QUICK},
                             {"dataset": "mnist", "data": "synthetic", **QUICK}]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    by_hand = workdir / "data" / "raw" / "mnist" / "train-labels-idx1-ubyte.gz"
    by_hand.parent.mkdir(parents=True)
    by_hand.write_bytes(b"a half-copied archive")
    result = snakemake(workdir)
    return workdir, config, by_hand, result


@pytest.mark.slow
def test_a_dataset_that_cannot_be_fetched_yields_failed_records_and_tables(unfetchable):
    workdir, _, by_hand, result = unfetchable
    assert result.returncode == 0, result.stderr[-5000:]
    runs = workdir / "results" / "runs" / "pytorch"
    failed = json.loads((runs / "mnist" / "lenet" / "cpu" / "fp32" / "train" / "rep1.json").read_text())
    assert failed["status"] == "failed"
    assert failed["reason"].startswith("dataset mnist could not be had: 4 of 4 mnist archive(s) cannot be had")
    assert "data/raw/mnist/train-labels-idx1-ubyte.gz: checksum mismatch" in failed["reason"]
    assert "could not fetch t10k-images-idx3-ubyte.gz from any mirror" in failed["reason"]
    assert "mirrors.mnist" in failed["reason"] and "make retry-failed" in failed["reason"]
    assert by_hand.read_bytes() == b"a half-copied archive"  # the user's file is kept
    assert not list(by_hand.parent.glob("*.part"))
    ok = json.loads((runs / "mnist-synthetic" / "lenet" / "cpu" / "fp32" / "train" / "rep1.json").read_text())
    assert ok["status"] == "ok"
    appendix = (workdir / "results" / "tables" / "appendix.md").read_text()
    assert "failed: dataset mnist could not be had" in appendix
    # the failed cell's figure: its status where the bar would stand, and why below the plot
    figure = workdir / "results" / "figures" / "mnist" / "lenet" / "train_speed"
    assert figure.with_suffix(".png").exists() and 'id="missing pytorch cpu"' in figure.with_suffix(".svg").read_text()
    drawn = svg_text(figure.with_suffix(".svg"))
    assert "pytorch: failed" in drawn and "pytorch / cpu: failed: dataset mnist could not be had" in drawn


@pytest.mark.slow
def test_the_run_ends_with_a_summary_of_the_runs(unfetchable):
    _, _, _, result = unfetchable
    output = result.stdout + result.stderr
    assert "dlbench runs:" in output
    row = next(line for line in output.splitlines() if line.strip().startswith("pytorch "))
    assert row.split()[1:] == ["1", "1", "0", "0", "0"]  # ok, failed, unavailable, unreadable, not run
    assert "failed (1): dataset mnist could not be had" in output
    assert "failed runs' logs: results/runs/pytorch/mnist/lenet/cpu/fp32/train/rep1.log" in output


@pytest.mark.slow
def test_settings_that_change_no_measurement_rerun_nothing(unfetchable):
    workdir, config, _, _ = unfetchable
    changed = {**config, "measurement": {"timeout_minutes": 7}, "slots": {"wait_minutes": 3},
               "mirrors": {"mnist": [(workdir / "another-mirror").as_uri()]}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(changed))
    try:
        result = snakemake(workdir, "--dry-run")
    finally:
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-3000:]


@pytest.mark.slow
def test_retry_failed_redoes_the_last_run_s_failed_runs_with_its_own_config(unfetchable):
    """make retry-failed after a run of a config of its own (here in a directory of its own, as --directory puts it)
    redoes that config's failed run, in that directory, and nothing else: it ran the default config."""
    workdir = unfetchable[0]
    runs = workdir / "results" / "runs" / "pytorch"
    failed, ok = (runs / dataset / "lenet" / "cpu" / "fp32" / "train" / "rep1.json"
                  for dataset in ("mnist", "mnist-synthetic"))
    first, ok_bytes = json.loads(failed.read_text()), ok.read_bytes()
    result = subprocess.run([sys.executable, str(ROOT / "workflow" / "scripts" / "retry_failed.py"), "--results",
                             str(workdir / "results"), "--", "--quiet", "progress"],
                            check=False, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 run(s) to redo" in result.stdout
    kept = list((workdir / "results" / "runs-failed").rglob("rep1.*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["provenance"] == first["provenance"]
    again = json.loads(failed.read_text())
    assert again["provenance"]["started_at"] > first["provenance"]["finished_at"]
    assert again["reason"].startswith("dataset mnist could not be had")  # its config's empty mirror, again
    assert ok.read_bytes() == ok_bytes
    assert (workdir / "results" / "report.html").exists()


RUN = "results/runs/pytorch/{}/{}/cpu/fp32/{}/rep1.json"
TRAINED = RUN.format("mnist-synthetic", "lenet", "train")
INFERRED = RUN.format("mnist-synthetic", "lenet", "inference")
ACCURATE = RUN.format("mnist-generated", "lenet", "accuracy")
RESIZABLE = RUN.format("cifar10-synthetic", "alexnet", "train")
FINISHED = [TRAINED, INFERRED, ACCURATE, RESIZABLE]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished run of each kind whose settings a config can change: training and inference of LeNet,
    LeNet's accuracy over an epoch of generated MNIST, AlexNet at CIFAR10's own size."""
    workdir = tmp_path_factory.mktemp("finished")
    config = {"frameworks": ["pytorch"], "repetitions": 1, "environment": "current", "threads": {"cpu": 1},
              "generated": {"train_images": 128, "test_images": 32},
              "benchmarks": [{"dataset": "mnist", "data": "synthetic", "tasks": ["train", "inference"],
                              "latency_calls": 20, **QUICK},
                             {"dataset": "mnist", "data": "generated", "networks": ["lenet"], "tasks": ["accuracy"],
                              "epochs": 1, "batch_size": 32, "target_accuracy": 0.5},
                             {"dataset": "cifar10", "data": "synthetic", "networks": ["alexnet"], "batch_size": 2,
                              "iterations": 3, "warmup_iterations": 1}]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, *FINISHED)
    assert result.returncode == 0, result.stderr[-5000:]
    for record in FINISHED:
        assert json.loads((workdir / record).read_text())["status"] == "ok", record
    return workdir, config


def scheduled(workdir, config, env=None) -> dict[str, str]:
    """The records a dry run with ``config`` would make again, and why."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, "--dry-run", *FINISHED, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = re.findall(r"output: (results/runs/\S+\.json).*?reason: ([^\n]*)", result.stdout, re.DOTALL)
    return dict(jobs)


def changed(config, case, **settings):
    """``config`` with ``settings`` of its benchmarks[case] (or of the config itself where case is None)."""
    config = copy.deepcopy(config)
    (config if case is None else config["benchmarks"][case]).update(settings)
    return config


# Each field of a run's spec that a config sets: a change to it, and the records it must make again.
# The others name the record's path (a change is another record) or follow from these.
CHANGES = {
    "batch_size_global": ((0, {"batch_size": 8}), [TRAINED, INFERRED]),
    "iterations": ((0, {"iterations": 13}), [TRAINED, INFERRED]),
    "warmup_iterations": ((0, {"warmup_iterations": 3}), [TRAINED, INFERRED]),
    "learning_rate": ((0, {"learning_rate": 0.02}), [TRAINED, INFERRED]),
    "latency_calls": ((0, {"latency_calls": 30}), [INFERRED]),
    "threads": ((None, {"threads": {"cpu": 2}}), FINISHED),
    "loader_workers": ((None, {"loader_workers": 1}), FINISHED),
    "epochs": ((1, {"epochs": 2}), [ACCURATE]),
    "target_accuracy": ((1, {"target_accuracy": 0.6}), [ACCURATE]),
    "input_size": ((2, {"input_size": 224}), [RESIZABLE]),
    "sample_hz": ((None, {"measurement": {"sample_hz": 25}}), FINISHED),
}
NAMED_BY_PATH = {"framework", "dataset", "network", "hardware", "device", "repetition", "precision", "compile", "task",
                 "batch_swept", "keras_fit"}  # a swept batch, Keras's fit: each names its variant (fp32-b64, fp32-fit)
DERIVED = {"data_dir": "the dataset's format, from framework and dataset", "seed": "the repetition"}


def test_every_setting_of_a_run_is_tested_for_reruns():
    fields = {field.name for field in dataclasses.fields(RunSpec)}
    assert fields == (set(CHANGES) - {"sample_hz"}) | NAMED_BY_PATH | set(DERIVED)


@pytest.mark.slow
@pytest.mark.parametrize("field", CHANGES)
def test_a_changed_setting_reruns_the_runs_it_changes(finished, field):
    workdir, config = finished
    (case, settings), expected = CHANGES[field]
    try:
        again = scheduled(workdir, changed(config, case, **settings))
    finally:
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    assert sorted(again) == sorted(expected), again
    # Snakemake's params, or the record's stamp (dlbench.record.currency; a dry run's stand-in), whichever Snakemake
    # names first
    assert all("Params have changed" in why or re.search(r"Updated input files: (\S+/dry-run/)?results/\.current/runs/",
                                                         why) for why in again.values()), again


@pytest.mark.slow
def test_a_record_found_stale_runs_again_and_where_it_does_not_is_never_aggregated(finished):
    """Snakemake 9 reruns for a newer input only where the input's content changed: a record edited (its backend's
    fingerprint changed, its speed tripled), or another cell's record put in its place, the config unchanged, is
    planned again. Where Snakemake is told not to rerun it (here --allowed-rules runs_table), the runs table leaves it
    out and its log names it."""
    workdir, config = finished
    record = workdir / TRAINED
    kept, kept_times = record.read_bytes(), record.stat()
    try:
        edited = json.loads(kept)
        edited["provenance"]["fingerprints"]["backend"] = "0" * 64
        edited["timing"]["images_per_second_mean"] *= 3
        record.write_text(json.dumps(edited))
        assert list(scheduled(workdir, config)) == [TRAINED]
        tables = snakemake(workdir, "--allowed-rules", "runs_table", "--", "results/tables/runs.csv")
        assert tables.returncode == 0, tables.stderr[-3000:]
        runs = pd.read_csv(workdir / "results" / "tables" / "runs.csv")
        assert len(runs) == len(FINISHED) - 1 and "train" not in set(runs.loc[runs["network"] == "lenet", "task"])
        assert (f"left out: {TRAINED} is not current (its backend's code or registry entry changed) and was not run "
                "again") in (workdir / "logs" / "aggregate" / "runs_table.log").read_text()
        record.write_bytes((workdir / INFERRED).read_bytes())  # the inference cell's record, in the training cell
        assert list(scheduled(workdir, config)) == [TRAINED]
    finally:
        record.write_bytes(kept)
        os.utime(record, ns=(kept_times.st_atime_ns, kept_times.st_mtime_ns))
    # put back as it was: a run (not a dry run, which leaves the stamp's date: dlbench.record.currency.stamp) dates
    # its stamp before it again, and nothing more runs
    assert snakemake(workdir, "--allowed-rules", "runs_table", "--", "results/tables/runs.csv").returncode == 0
    (workdir / "results" / "tables" / "runs.csv").unlink()
    assert scheduled(workdir, config) == {}


@pytest.mark.slow
def test_an_upgraded_framework_reruns_every_run(finished, tmp_path):
    """environment: current runs the frameworks in Snakemake's interpreter: a distribution installed there
    (here one more on the path) changes what the runs measure."""
    workdir, config = finished
    (tmp_path / "torch_upgrade-9.9.dist-info").mkdir()
    (tmp_path / "torch_upgrade-9.9.dist-info" / "METADATA").write_text("Name: torch-upgrade\nVersion: 9.9\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    assert sorted(scheduled(workdir, config, env=env)) == sorted(FINISHED)


@pytest.mark.slow
def test_settings_that_change_no_measurement_rerun_none_of_the_runs(finished, tmp_path):
    workdir, config = finished
    assert scheduled(workdir, config) == {}
    unchanged = {**config, "measurement": {"timeout_minutes": 7}, "mirrors": {"mnist": [tmp_path.as_uri()]},
                 "slots": {"wait_minutes": 3, "directory": str(tmp_path)}}
    assert scheduled(workdir, unchanged) == {}


def _generated_lenet_run(workdir) -> tuple[dict, str]:
    """LeNet trained once in ``workdir`` on 64 generated MNIST images: its config and its record's path."""
    config = {"frameworks": ["pytorch"], "repetitions": 1, "environment": "current", "threads": {"cpu": 1},
              "generated": {"train_images": 64, "test_images": 16},
              "benchmarks": [{"dataset": "mnist", "data": "generated", **QUICK}]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    record = RUN.format("mnist-generated", "lenet", "train")
    assert snakemake(workdir, record).returncode == 0
    return config, record


@pytest.mark.slow
def test_a_changed_generated_size_regenerates_its_data_and_reruns_its_runs_without_snakemake_s_metadata(tmp_path):
    """generated.train_images 64 -> 96 with .snakemake/metadata gone (a fresh checkout beside old results): the
    stand-in's own record of its sizes differs from the config's, so it is generated, converted and run again, and
    the run reads 96 images, not the 64 left on disk."""
    config, record = _generated_lenet_run(tmp_path)
    shutil.rmtree(tmp_path / ".snakemake" / "metadata")
    config["generated"]["train_images"] = 96
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    before = written(tmp_path)
    dry = snakemake(tmp_path, record, "--dry-run", "--quiet", "rules")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert written(tmp_path) == before  # a dry run writes nothing there: its stamps' stand-ins are in .snakemake/
    assert "dlbench: data/raw/mnist-generated was generated with" in dry.stderr
    assert {"generate_mnist", "unpack_mnist_generated", "convert", "train"} <= set(planned_rules(dry)), dry.stdout
    assert snakemake(tmp_path, record).returncode == 0
    converted = json.loads((tmp_path / "data" / "mnist-generated" / "lmdb" / "CONVERTED.json").read_text())
    assert converted["splits"]["train"]["images"] == 96, converted
    assert planned_rules(snakemake(tmp_path, record, "--dry-run", "--quiet", "rules")) == {}  # nothing more


def written(workdir) -> dict[str, tuple]:
    """Each file and directory in ``workdir``'s results/ and data/, with its kind, size, date and contents' digest."""
    return {str(path.relative_to(workdir)): (path.is_symlink(), path.is_dir(), path.lstat().st_size,
                                             path.lstat().st_mtime_ns,
                                             path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest())
            for place in ("results", "data") for path in [workdir / place, *(workdir / place).rglob("*")]}


def planned_rules(dry_run) -> dict[str, int]:
    """A ``--dry-run --quiet rules`` run's jobs per rule."""
    return {line.split()[0]: int(line.split()[1]) for line in dry_run.stdout.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit() and line.split()[0] != "total"}


@pytest.mark.slow
def test_a_run_on_a_damaged_conversion_converts_it_again_first(tmp_path):
    """A conversion truncated after its first run (a full disk, a half copy), then a run that reads it (here, its
    setting changed): a dry run plans its conversion again, which the run does (nothing moved while the DAG is
    built: a damage stamp, an input of the conversion, says what was found), and the run reads whole data. (A record
    already made is not redone: its data was whole when it ran.)"""
    config, record = _generated_lenet_run(tmp_path)
    converted = tmp_path / "data" / "mnist-generated" / "lmdb"
    data = converted / "train-00000-of-00001" / "data.mdb"
    with open(data, "r+b") as file:
        file.truncate(data.stat().st_size // 2)
    config["benchmarks"][0]["iterations"] += 1
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))

    before = written(tmp_path)
    dry = snakemake(tmp_path, record, "--dry-run", "--quiet", "rules")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert written(tmp_path) == before
    assert "converting data/mnist-generated/lmdb again before a run reads it" in dry.stderr
    assert "convert " in dry.stdout, dry.stdout
    assert data.stat().st_size < json.loads((data.parent / "SHARD.json").read_text())["files"]["data.mdb"]["bytes"]

    result = snakemake(tmp_path, record)
    assert result.returncode == 0, result.stderr[-5000:]
    assert "rule convert:" in result.stderr
    from dlbench import formats

    formats.check(converted)
    stamp = json.loads((tmp_path / "data" / ".damaged" / "mnist-generated" / "lmdb.json").read_text())
    assert "data.mdb has" in stamp["problems"][0] and stamp["target"] == "data/mnist-generated/lmdb"
    assert "Nothing to be done" in snakemake(tmp_path, "--dry-run", record).stdout  # converted once, not again
    rerun = json.loads((tmp_path / record).read_text())
    assert rerun["status"] == "ok" and rerun["run"]["iterations"] == QUICK["iterations"] + 1

    # Changed in place, its size kept: the run refuses it and says how to convert it again; doing what it says
    # converts it again, and a plain run then reruns the run that read it.
    data.write_bytes(bytes(reversed(data.read_bytes())))
    assert snakemake(tmp_path, "--force", record).returncode == 0
    refused = json.loads((tmp_path / record).read_text())
    advice = re.search(r"convert it again: snakemake --force (\S+); then a plain snakemake run reruns the runs that "
                       r"read it", refused["reason"])
    assert refused["status"] == "failed" and "data.mdb was modified after its conversion" in refused["reason"]
    assert advice, refused["reason"]
    assert snakemake(tmp_path, "--force", advice.group(1)).returncode == 0
    formats.check(converted)
    again = snakemake(tmp_path, record)
    assert again.returncode == 0, again.stderr[-5000:]
    assert json.loads((tmp_path / record).read_text())["status"] == "ok"


@pytest.mark.slow
def test_a_record_is_current_only_while_its_spec_and_what_ran_it_are_unchanged(tmp_path):
    """Decided from the records themselves: in a copy of the workflow whose records stand in place (planted, each
    what its run would hold), a README edit reruns nothing; LeNet's description reruns every record (networks.py is
    code they all import), LeNet's named for their network; a comment in TensorFlow's backend reruns nothing, a
    statement TensorFlow's records; with Snakemake's metadata lost, a changed batch size reruns what it changes."""
    import shutil

    copy_ = tmp_path / "dlbench"
    copy_.mkdir()
    for part in ("Snakefile", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, copy_ / part)
    for part in ("rules", "workflow", "config", "envs", "report"):
        shutil.copytree(ROOT / part, copy_ / part, ignore=shutil.ignore_patterns("__pycache__"))
    workdir = tmp_path / "work"
    workdir.mkdir()
    config = {"frameworks": ["pytorch", "tensorflow"], "repetitions": 1, "environment": "current",
              "benchmarks": [{"dataset": "mnist", "data": "synthetic", **QUICK, "networks": ["lenet", "mlp"]}]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    records = [f"results/runs/{framework}/mnist-synthetic/{network}/cpu/fp32/train/rep1.json"
               for framework in ("pytorch", "tensorflow") for network in ("lenet", "mlp")]

    def rerun() -> list[str]:
        done = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(copy_ / "Snakefile"),
                               "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores",
                               "2", "--dry-run", *records], capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        rerun.why = dict(re.findall(r"dlbench: (results/runs/\S+\.json) is not current \((.*)\): it runs again",
                                    done.stdout + done.stderr))
        return sorted(re.findall(r"output: (results/runs/\S+\.json)", done.stdout))

    assert rerun() == sorted(records)  # none made yet; the dry run writes each record's stamp's stand-in
    for record in records:  # each record as its run would make it: its spec and what ran it
        held = json.loads((workdir / plan.DRY_RUN_ROOT / currency.stamp_path(record)).read_text())
        (workdir / record).parent.mkdir(parents=True)
        (workdir / record).write_text(json.dumps({"run": held["run"], "provenance": {
            "fingerprints": held["fingerprints"]}}))
    ceiling = workdir / "results" / "ceilings" / "cpu-fp32.json"
    ceiling.parent.mkdir(parents=True)
    ceiling.write_text("{}")
    assert rerun() == []

    (copy_ / "README.md").write_text("edited\n")
    assert rerun() == []
    networks = copy_ / "workflow" / "scripts" / "dlbench" / "networks.py"
    networks.write_text(networks.read_text().replace("Conv(20, 5), MaxPool(2, 2), Conv(50, 5)",
                                                     "Conv(21, 5), MaxPool(2, 2), Conv(50, 5)"))
    assert rerun() == sorted(records)  # networks.py is code every run imports (dlbench.record.currency)
    assert "network" not in rerun.why[RUN.format("mnist-synthetic", "mlp", "train")]
    assert rerun.why[RUN.format("mnist-synthetic", "lenet", "train")].startswith("its network's description changed")
    networks.write_text(networks.read_text().replace("Conv(21, 5)", "Conv(20, 5)"))
    assert rerun() == []
    backend = copy_ / "workflow" / "scripts" / "dlbench" / "backends" / "tensorflow.py"
    backend.write_text(backend.read_text() + "\n# edited\n")
    assert rerun() == []  # a comment
    backend.write_text(backend.read_text() + "EDITED = True\n")
    assert rerun() == sorted(record for record in records if "/tensorflow/" in record)
    backend.write_text(backend.read_text().removesuffix("\n# edited\nEDITED = True\n"))
    assert rerun() == []

    shutil.rmtree(workdir / ".snakemake" / "metadata", ignore_errors=True)
    config["benchmarks"][0]["batch_size"] = 32
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    assert rerun() == sorted(records)


def test_records_of_one_case_named_on_the_command_line_are_planned_together(tmp_path):
    """Each record's currency stamp is written while Snakemake builds the DAG; one case's records named together
    (their stamps in one directory, which Snakemake lists once) were each but the first missing an input."""
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(
        {"frameworks": ["pytorch"], "repetitions": 3, "environment": "current",
         "benchmarks": [{"dataset": "mnist", "data": "synthetic", **QUICK}]}))
    records = [f"results/runs/pytorch/mnist-synthetic/lenet/cpu/fp32/train/rep{r}.json" for r in (1, 2, 3)]
    planned = snakemake(tmp_path, "--dry-run", *records)
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert sorted(re.findall(r"output: (results/runs/\S+\.json)", planned.stdout)) == records
