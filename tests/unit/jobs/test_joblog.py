"""The entry points' log: a job's prints and its traceback go to its Snakemake log, and the error still fails
the job."""
import pytest
from dlbench.jobs.joblog import logged


def test_prints_and_a_traceback_reach_the_log_and_the_error_still_fails_the_job(tmp_path):
    log = tmp_path / "job.log"
    with pytest.raises(ValueError, match="bad input"), logged(str(log)):
        print("converting 10 images")
        raise ValueError("bad input")
    text = log.read_text()
    assert text.startswith("converting 10 images\n")
    assert "Traceback (most recent call last)" in text and "ValueError: bad input" in text


def test_a_rerun_appends_to_the_log(tmp_path):
    log = tmp_path / "job.log"
    for attempt in (1, 2):
        with logged(str(log)):
            print(f"attempt {attempt}")
    assert log.read_text() == "attempt 1\nattempt 2\n"


def test_a_full_disk_is_said_with_where_the_job_writes_and_the_room_left(tmp_path, monkeypatch):
    """/dev/full answers every write as a full disk does (ENOSPC), naming no file."""
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "job.log"
    with pytest.raises(OSError, match="No space left on device"), logged(str(log)), open("/dev/full", "w") as full:
        full.write("a converted shard")
    said = log.read_text().splitlines()[-1]
    assert said.startswith(f"dlbench: no space left on the device of {tmp_path} (data/, results/ and .snakemake/ "
                           "are there; ") and " MiB free): free space there, then rerun" in said


def test_a_full_disk_under_a_conversion_is_named_with_its_output_and_the_room_left(tmp_path, tiny_disk):
    """LMDB reports its full disk as "mdb_txn_commit: Input/output error", with no errno."""
    from dlbench import datasets, formats

    datasets.generate("mnist", tmp_path / "raw", train_images=2000, test_images=16, seed=1)
    datasets.unpack("mnist", tmp_path / "raw", tmp_path / "data")
    output, log = tiny_disk / "mnist-generated" / "lmdb", tmp_path / "convert.log"
    with pytest.raises(Exception, match="Input/output error"), logged(str(log), writes_to=output):
        formats.convert("lmdb", "mnist", tmp_path / "data", output, log=print)
    assert log.read_text().splitlines()[-1].startswith(
        f"dlbench: the device of {output} has 0.0 MiB free: a full disk is the likely cause of the error above "
        "(Error: mdb_txn_commit: Input/output error); free space there, then rerun")
