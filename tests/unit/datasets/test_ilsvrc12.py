"""ILSVRC12 from archives in the real layout (a generated miniature): checksum, index, shards."""
import json
import tarfile

import numpy as np
import pytest
from dlbench import datasets, formats
from dlbench.datasets import ilsvrc12
from dlbench.formats import cntk_map, codec

SHAPE = (3, 224, 224)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("ilsvrc12")
    truth = ilsvrc12.generate(root / "raw", classes=5, train_images=30, test_images=12, seed=3)
    counts = ilsvrc12.build_index(root / "raw", root / "index", log=lambda line: None)
    return root, truth, counts


def test_classes_are_numbered_in_wnid_order_and_validation_labels_follow(indexed):
    root, truth, counts = indexed
    assert counts == {"train": 30, "test": 12}
    classes = [line.split("\t")[1] for line in (root / "index" / "classes.tsv").read_text().splitlines()]
    assert classes == sorted(truth["wnids"])  # the 2 non-leaf synsets of meta.mat are not classes
    label_of = {wnid: index for index, wnid in enumerate(classes)}
    source = ilsvrc12.Source(root / "raw", root / "index")
    # The devkit lists ILSVRC2012_IDs, which the generator numbers out of WNID order.
    expected = [label_of[truth["wnids"][c]] for c in truth["test_labels"]]
    assert [source.index["test"][i][3] for i in range(12)] == expected
    for name, _, _, label in source.index["train"]:
        assert name.startswith(classes[label] + "_")


def test_a_class_subset_keeps_the_images_of_its_classes_renumbered_in_wnid_order(indexed, tmp_path):
    """Seed 004's ten classes: read back through the subset's index, each image is the whole dataset's, its
    label the class's place among the chosen."""
    root, truth, _ = indexed
    wnids = sorted(truth["wnids"])
    assert ilsvrc12.chosen_classes(wnids, 2) == [wnids[0], wnids[2]]  # evenly spaced: 0 and 5 // 2
    chosen = [wnids[4], wnids[1]]
    counts = ilsvrc12.select_classes(root / "index", tmp_path / "index", chosen, log=lambda line: None)
    whole, subset = ilsvrc12.Source(root / "raw", root / "index"), ilsvrc12.Source(root / "raw", tmp_path / "index")
    for split, labels in (("train", truth["train_labels"]), ("test", truth["test_labels"])):
        expected = [(name, offset, size, [wnids[1], wnids[4]].index(wnids[label]))
                    for name, offset, size, label in whole.index[split] if wnids[label] in chosen]
        assert subset.index[split] == expected and counts[split] == len(expected) > 0
        assert sum(truth["wnids"][c] in chosen for c in labels) == counts[split]
    _, image, label = subset.record("test", 0)
    assert image.shape[0] == 3 and label in (0, 1)
    assert (tmp_path / "index" / "classes.tsv").read_text().splitlines()[0].split("\t")[:2] == ["0", wnids[1]]
    with pytest.raises(ValueError, match="n00000000 not among the dataset's 5 classes"):
        ilsvrc12.select_classes(root / "index", tmp_path / "other", [wnids[0], "n00000000"])
    with pytest.raises(ValueError, match="classes: 6 of 5 classes; allowed: 2 to 5"):
        ilsvrc12.chosen_classes(wnids, 6)


def test_images_are_rgb_with_the_shorter_side_256_whatever_their_encoding(indexed):
    root, truth, _ = indexed
    source = ilsvrc12.Source(root / "raw", root / "index")
    names = {}
    for index in range(source.count("train")):
        name, image, _ = source.record("train", index)
        names[name] = image
        assert image.dtype == np.uint8 and image.shape[0] == 3 and min(image.shape[1:]) == 256
    wnid = truth["wnids"][truth["train_labels"][0]]
    grey = names[f"{wnid}_0.JPEG"]  # generated grey, like the real data's few greyscale JPEGs
    assert np.array_equal(grey[0], grey[1]) and np.array_equal(grey[1], grey[2])


def test_a_corrupt_archive_is_caught_by_its_checksum_and_kept(indexed, tmp_path):
    root, _, _ = indexed
    for name in ilsvrc12.ARCHIVES:
        (tmp_path / name).write_bytes((root / "raw" / name).read_bytes())
    expected = {name: datasets.md5sum(tmp_path / name) for name in ilsvrc12.ARCHIVES}
    quiet = {"remedy": "Put the published archives there.", "log": lambda line: None}
    assert datasets.obtain("imagenet", tmp_path, expected, [], **quiet)["status"] == "ok"  # intact: accepted
    data = (tmp_path / ilsvrc12.VAL_TAR).read_bytes()
    (tmp_path / ilsvrc12.VAL_TAR).write_bytes(data[: len(data) // 2])  # an interrupted copy
    status = datasets.obtain("imagenet", tmp_path, expected, [], **quiet)
    assert status["status"] == "failed" and status["reason"].startswith("1 of 3 imagenet archive(s) cannot be had")
    assert "ILSVRC2012_img_val.tar: checksum mismatch" in status["reason"]
    assert (tmp_path / ilsvrc12.VAL_TAR).read_bytes() == data[: len(data) // 2]


def _write_all_shards(root, format_name, counts):
    source = ilsvrc12.Source(root / "raw", root / "index")
    out = root / format_name
    if not out.exists():
        shards = []
        for split, count in counts.items():
            for index in range(count):
                shard = formats.Shard(format_name, split, index, count, "jpeg", SHAPE)
                formats.write_shard(shard, source, root / "shards" / format_name / shard.name, log=lambda line: None)
                shards.append(root / "shards" / format_name / shard.name)
        out.mkdir()
        formats.link_shards(out, shards)
        formats.finish(format_name, out, "test")
    return source, out


@pytest.mark.parametrize("format_name", ["lmdb", "tfrecord", "cntk"])
def test_shards_round_trip_in_the_stored_order(indexed, format_name):
    root, _, _ = indexed
    source, out = _write_all_shards(root, format_name, {"train": 3, "test": 2})
    summary = json.loads((out / "CONVERTED.json").read_text())["splits"]
    assert [len(summary[s]["shards"]) for s in ("train", "test")] == [3, 2] and summary["train"]["images"] == 30
    for split in formats.SPLITS:
        order = formats.shuffled_order(source.count(split), 0)
        read = list(formats.read_split(format_name, out, split))
        assert len(read) == source.count(split)
        for (image, label), index in zip(read, order):
            _, expected, expected_label = source.record(split, int(index))
            if format_name != "lmdb":  # raw pixels there; JPEG elsewhere: the pixels a decoder will see
                expected = codec.decode(codec.encode(expected, "jpeg"))
            assert label == expected_label and np.array_equal(image, expected)


def test_cntk_map_and_mean_files_cover_all_shards(indexed):
    root, _, _ = indexed
    source, out = _write_all_shards(root, "cntk", {"train": 3, "test": 2})
    lines = (out / "train_map.txt").read_text().splitlines()
    assert len(lines) == 30 and all((out / line.split("\t")[0]).exists() for line in lines)
    crops = [cntk_map.center_crop(source.record("train", i)[1], 224, 224) for i in range(30)]
    mean = cntk_map.read_mean(out / cntk_map.MEAN_FILE)
    assert mean.shape == SHAPE
    np.testing.assert_allclose(mean, np.mean(crops, axis=0), rtol=1e-5)


def test_a_failing_shard_leaves_no_partial_output(indexed, tmp_path):
    root, _, _ = indexed

    class Failing(ilsvrc12.Source):
        def record(self, split, index):
            if index == 7:
                raise OSError("disk went away")
            return super().record(split, index)

    output = tmp_path / "train-00000-of-00001"
    with pytest.raises(OSError):
        formats.write_shard(formats.Shard("lmdb", "train", 0, 1, "jpeg", SHAPE), Failing(root / "raw", root / "index"),
                            output, log=lambda line: None)
    assert list(tmp_path.iterdir()) == []


def test_pytorch_crops_the_ilsvrc12_lmdb_to_the_network_input(indexed):
    torch = pytest.importorskip("torch")
    from dlbench.backends.pytorch import LmdbDataset, _as_tensors

    root, _, _ = indexed
    _, out = _write_all_shards(root, "lmdb", {"train": 3, "test": 2})
    loader = torch.utils.data.DataLoader(LmdbDataset(formats.shard_dirs(out, "train"), SHAPE), batch_size=10,
                                         num_workers=2, collate_fn=_as_tensors)
    batches = list(loader)
    assert [tuple(images.shape) for images, _ in batches] == [(10, *SHAPE)] * 3


def test_runs_of_records_cross_shard_boundaries(indexed):
    torch = pytest.importorskip("torch")
    from dlbench.backends.pytorch import LmdbDataset, ShuffledRuns, _as_tensors

    root, _, _ = indexed
    _, out = _write_all_shards(root, "lmdb", {"train": 3, "test": 2})
    dataset = LmdbDataset(formats.shard_dirs(out, "train"), SHAPE)
    runs = list(ShuffledRuns(len(dataset), 7, torch.Generator().manual_seed(1)))  # 30 records in shards of 10
    assert sorted(index for run in runs for index in run) == list(range(28))
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=ShuffledRuns(len(dataset), 7,
                                         torch.Generator().manual_seed(1)), collate_fn=_as_tensors)
    for run, (images, labels) in zip(runs, loader, strict=True):
        assert labels.tolist() == [int(dataset[index][1]) for index in run]  # each record looked up alone


def test_the_train_tar_holds_one_tar_per_class(indexed):
    root, truth, _ = indexed
    with tarfile.open(root / "raw" / ilsvrc12.TRAIN_TAR) as tar:
        assert sorted(tar.getnames()) == sorted(f"{wnid}.tar" for wnid in truth["wnids"])


def test_a_damaged_shard_is_named_by_its_own_job(indexed, tmp_path, monkeypatch):
    """ILSVRC12's shards are jobs of their own, linked into the format's directory: a truncated one is
    named, and converted again, by its own path (not the whole dataset's)."""
    root, _, _ = indexed
    _, out = _write_all_shards(root, "tfrecord", {"train": 3, "test": 2})
    monkeypatch.chdir(root)
    shard = root / "shards" / "tfrecord" / "train-00001-of-00003"
    data = shard / formats.TFRECORD_FILE
    whole = data.read_bytes()
    try:
        data.write_bytes(whole[:len(whole) // 2])
        assert list(formats.damage(out)) == [shard.relative_to(root)]
        with pytest.raises(formats.DamagedShard, match=r"snakemake --force shards/tfrecord/train-00001-of-00003;"):
            formats.check(out)
    finally:
        data.write_bytes(whole)
    formats.check(out)  # the same bytes again: the checksum passes although the file was modified
