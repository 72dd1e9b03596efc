"""The entry points' log: a job's prints and its traceback go to its Snakemake log, and the error still fails
the job."""
import pytest
from dlbench.joblog import logged


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
