"""RecordIO, written with mxnet.recordio in the MXNet venv and read back by MXNet's own reader."""
import pytest
from dlbench import datasets, formats
from dlbench.datasets import ilsvrc12

from ...conftest import run_in


@pytest.mark.slow
def test_recordio_round_trips_through_mxnet(tmp_path, mxnet_python):
    for family in ("mnist", "cifar10"):
        datasets.generate(family, tmp_path / family / "raw", train_images=120, test_images=30, seed=5)
        datasets.unpack(family, tmp_path / family / "raw", tmp_path / family / "data")
    ilsvrc12.generate(tmp_path / "ilsvrc12" / "raw", classes=4, train_images=8, test_images=12, seed=2)
    ilsvrc12.build_index(tmp_path / "ilsvrc12" / "raw", tmp_path / "ilsvrc12" / "index", log=lambda line: None)
    result = run_in(mxnet_python, "recordio_in_mxnet.py", tmp_path)
    for family in ("mnist", "cifar10"):
        for split, count in (("train", 120), ("test", 30)):
            checks = result[f"{family}/{split}"]
            assert checks["count"] == [count] * 3
            assert checks["format_level_equal"] and checks["image_record_iter_equal"], checks
            assert checks["lst"].startswith("0\t")  # im2rec's <id>\t<label>\t<path>
    assert result["ilsvrc12/test"]["count"] == [12, 12] and result["ilsvrc12/test"]["labels_equal"]
    # JPEG (quality 95) of noisy photos: a few grey levels off, far from a colour-order mistake.
    assert result["ilsvrc12/test"]["mean_abs_error_max"] < 5 < 4 * 5 < result["ilsvrc12/test"]["channel_swap_error_min"]
    # A half-copied .rec (MXNet's reader segfaults on one) is refused before any run reads it.
    converted = tmp_path / "mnist" / "recordio"
    formats.check(converted)
    rec = converted / "train-00000-of-00001" / "data.rec"
    with open(rec, "r+b") as file:
        file.truncate(rec.stat().st_size // 2)
    with pytest.raises(formats.DamagedShard,
                       match=f"{rec} has .* its conversion wrote .* snakemake --force {converted}"):
        formats.check(converted)
