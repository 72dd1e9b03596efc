"""Files dlbench writes: whole or not at all, and never through a link planted where it writes (a lab's shared,
group-writable results directory), by its one write primitive (dlbench.files.write_bytes)."""
import json
import os
import stat
from pathlib import Path

import pytest
from dlbench import files
from dlbench.record import currency
from dlbench.spec import RunSpec


@pytest.fixture
def victim(tmp_path):
    """Another user's file, which a planted link points at."""
    path = tmp_path / "elsewhere" / "theirs.txt"
    path.parent.mkdir()
    path.write_text("their words\n")
    return path


@pytest.mark.parametrize("name", ["rep1.json", "rep1.series.json.gz"])
def test_a_link_planted_at_the_partial_file_or_the_file_itself_writes_nothing_through_it(tmp_path, victim, name):
    record = tmp_path / "results" / name
    record.parent.mkdir()
    (record.parent / f"{name}.part").symlink_to(victim)
    files.write_json(record, {"written": True})
    assert files.read_json(record) == {"written": True}
    record.unlink()
    record.symlink_to(victim)
    files.write_json(record, {"written": "again"})
    assert not record.is_symlink() and files.read_json(record) == {"written": "again"}  # the link replaced
    assert victim.read_text() == "their words\n"
    assert sorted(path.name for path in record.parent.iterdir()) == sorted([name, f"{name}.part"])  # nothing left


def test_a_written_file_has_the_mode_open_would_give_it(tmp_path):
    files.write_text(tmp_path / "table.md", "# a table\n")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "table.md").stat().st_mode) == 0o666 & ~mask


def test_a_currency_stamp_replaces_a_link_planted_in_its_place(tmp_path, victim, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record = "results/runs/pytorch/mnist-synthetic/lenet/cpu/fp32/train/rep1.json"
    stamp = tmp_path / currency.stamp_path(record)
    stamp.parent.mkdir(parents=True)
    stamp.symlink_to(victim)
    currency.stamp(record, _spec(), log=lambda line: None)
    assert not stamp.is_symlink() and json.loads(stamp.read_text())["run"]["network"] == "lenet"
    assert victim.read_text() == "their words\n"


def test_a_download_writes_nothing_through_a_link_planted_beside_it(tmp_path, victim):
    from dlbench import datasets

    source = tmp_path / "mirror" / "train-labels-idx1-ubyte.gz"
    source.parent.mkdir()
    source.write_bytes(b"an archive's bytes")
    destination = tmp_path / "data" / "raw" / "mnist" / source.name
    destination.parent.mkdir(parents=True)
    (destination.parent / f"{source.name}.part").symlink_to(victim)
    datasets.fetch(source.as_uri(), destination, log=lambda line: None)
    assert destination.read_bytes() == b"an archive's bytes" and victim.read_text() == "their words\n"


def _spec() -> RunSpec:
    return RunSpec(framework="pytorch", dataset="mnist-synthetic", network="lenet", device="cpu", repetition=1,
                   batch_size_global=16, iterations=4, warmup_iterations=1, learning_rate=0.01, threads=1)


@pytest.mark.parametrize("root", [".", ".snakemake/dlbench/dry-run"])
def test_a_directory_link_planted_where_a_stamp_goes_is_refused_by_name(tmp_path, victim, monkeypatch, root):
    """results/.current/runs linked into another user's directory: the stamp (or a dry run's stand-in of it) is
    not written through it, and the error names the link."""
    monkeypatch.chdir(tmp_path)
    record = "results/runs/pytorch/mnist-synthetic/lenet/cpu/fp32/train/rep1.json"
    planted = Path(root) / currency.STAMPS / "runs"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim.parent, target_is_directory=True)
    with pytest.raises(files.PlantedLink, match=f"{planted} is a link .*where dlbench makes a directory of its own"):
        currency.stamp(record, _spec(), log=lambda line: None, root=Path(root))
    assert sorted(path.name for path in victim.parent.iterdir()) == ["theirs.txt"]


def test_a_converted_directory_replaces_a_link_planted_in_its_place(tmp_path, victim):
    """A conversion's output (a directory its framework's writer fills) at a planted link: the link goes, the
    directory takes its place, and nothing is written into the link's target."""
    output = tmp_path / "data" / "mnist" / "lmdb"
    output.parent.mkdir(parents=True)
    output.symlink_to(victim.parent, target_is_directory=True)
    with files.staged_directory(output) as scratch:
        assert scratch.parent == output.parent and stat.S_IMODE(scratch.stat().st_mode) == 0o700
        (scratch / "data.mdb").write_bytes(b"converted")
    assert not output.is_symlink() and (output / "data.mdb").read_bytes() == b"converted"
    assert sorted(path.name for path in victim.parent.iterdir()) == ["theirs.txt"]
    assert sorted(path.name for path in output.parent.iterdir()) == ["lmdb"]  # no scratch directory left


def test_a_failed_conversion_leaves_its_previous_output_as_it_was(tmp_path):
    output = tmp_path / "lmdb"
    output.mkdir()
    (output / "data.mdb").write_bytes(b"the old conversion")
    with pytest.raises(RuntimeError), files.staged_directory(output) as scratch:
        (scratch / "data.mdb").write_bytes(b"half")
        raise RuntimeError("the disk is full")
    assert (output / "data.mdb").read_bytes() == b"the old conversion" and sorted(tmp_path.iterdir()) == [output]
