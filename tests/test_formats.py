"""Every format round-trips: what was written is read back and equals the source, in stored order."""
import struct

import crc32c
import numpy as np
import pytest
from dlbench import datasets, formats
from dlbench.formats import cntk_map, lmdb_datum, tfrecord_example

# RecordIO needs MXNet's environment: tests/test_recordio.py.
WORKFLOW_ENV_FORMATS = sorted(set(formats.MODULES) - set(formats.WRITER_ENVIRONMENTS))


@pytest.fixture(scope="module", params=["mnist", "cifar10"])
def unpacked(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    datasets.generate(request.param, root / "raw", train_images=120, test_images=30, seed=5)
    datasets.unpack(request.param, root / "raw", root / "data")
    return request.param, root


@pytest.mark.parametrize("format_name", WORKFLOW_ENV_FORMATS)
def test_round_trip_equals_the_source(unpacked, format_name):
    family, root = unpacked
    output = root / format_name
    stats = formats.convert(format_name, family, root / "data", output, seed=7, log=lambda line: None)
    assert stats["train"]["images"] == 120 and (output / "CONVERTED.json").exists()
    for split in formats.SPLITS:
        images, labels = datasets.load_split(family, root / "data", split)
        order = formats.shuffled_order(len(images), 7)
        read = list(formats.read_split(format_name, output, split))
        assert len(read) == len(images)
        for (image, label), index in zip(read, order):
            assert image.dtype == np.uint8 and image.shape == images[index].shape
            assert np.array_equal(image, images[index]) and label == labels[index]


def test_lmdb_holds_caffe_datum_records(unpacked):
    family, root = unpacked
    formats.convert("lmdb", family, root / "data", root / "lmdb-check", log=lambda line: None)
    import lmdb

    env = lmdb.open(str(root / "lmdb-check" / "test-00000-of-00001"), readonly=True, lock=False)
    with env.begin() as transaction:
        key, value = next(iter(transaction.cursor()))
        stats = env.stat()
    datum = lmdb_datum.Datum.FromString(value)
    shape = datasets.FAMILIES[family].image_shape
    assert (datum.channels, datum.height, datum.width) == shape and not datum.encoded
    assert len(datum.data) == int(np.prod(shape)) and stats["entries"] == 30
    assert key.decode().startswith("00000000_")


def _masked_crc(data: bytes) -> int:
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_tfrecord_framing_has_the_crcs_tensorflow_checks(unpacked):
    family, root = unpacked
    formats.convert("tfrecord", family, root / "data", root / "tfr", log=lambda line: None)
    data = (root / "tfr" / "test-00000-of-00001" / tfrecord_example.FILE).read_bytes()
    records, offset = 0, 0
    while offset < len(data):
        length_bytes = data[offset:offset + 8]
        (length,), (length_crc,) = struct.unpack("<Q", length_bytes), struct.unpack("<I", data[offset + 8:offset + 12])
        payload = data[offset + 12:offset + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[offset + 12 + length:offset + 16 + length])
        assert length_crc == _masked_crc(length_bytes) and payload_crc == _masked_crc(payload)
        offset += 16 + length
        records += 1
    assert records == 30


def test_cntk_mean_file_is_the_training_mean_in_opencv_layout(unpacked):
    family, root = unpacked
    formats.convert("cntk", family, root / "data", root / "cntk-check", log=lambda line: None)
    images, _ = datasets.load_split(family, root / "data", "train")
    mean = cntk_map.read_mean(root / "cntk-check" / cntk_map.MEAN_FILE)
    assert mean.shape[0] == 3  # CNTK's reader decodes MNIST's grayscale PNGs in colour too
    np.testing.assert_allclose(mean, np.broadcast_to(images.mean(axis=0), mean.shape), rtol=1e-5)
    text = (root / "cntk-check" / cntk_map.MEAN_FILE).read_text()
    assert "<opencv_storage>" in text and 'type_id="opencv-matrix"' in text and "<dt>f</dt>" in text
    assert text.startswith('<?xml version="1.0"?>') and max(map(len, text.splitlines())) < 200  # OpenCV 3.1 reads it
    first_line = (root / "cntk-check" / "train_map.txt").read_text().splitlines()[0]
    assert first_line.split("\t")[0] == "train-00000-of-00001/00000000.png"


def test_a_failed_conversion_leaves_nothing_behind(tmp_path):
    with pytest.raises(FileNotFoundError):
        formats.convert("lmdb", "mnist", tmp_path / "missing", tmp_path / "out", log=lambda line: None)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))


@pytest.mark.parametrize("workers, sampler", [(0, "runs"), (2, "runs"), (0, "scattered")])
def test_pytorch_reads_the_lmdb_through_its_dataloader(unpacked, workers, sampler):
    torch = pytest.importorskip("torch")
    from dlbench.backends.pytorch import LmdbDataset, ShuffledRuns, _as_tensors

    family, root = unpacked
    formats.convert("lmdb", family, root / "data", root / "lmdb-torch", log=lambda line: None)
    dataset = LmdbDataset(formats.shard_dirs(root / "lmdb-torch", "train"), datasets.FAMILIES[family].image_shape)
    batching = ({"batch_sampler": ShuffledRuns(len(dataset), 8, torch.Generator().manual_seed(0))}
                if sampler == "runs" else {"batch_size": 16, "shuffle": True})  # 120 images: 15 runs of 8
    loader = torch.utils.data.DataLoader(dataset, num_workers=workers, collate_fn=_as_tensors, **batching)
    source_images, source_labels = datasets.load_split(family, root / "data", "train")
    expected = {image.tobytes(): (index, int(label)) for index, (image, label) in
                enumerate(zip(source_images, source_labels))}
    seen, mirrored = [], 0
    for images, labels in loader:
        assert images.dtype == torch.uint8 and labels.dtype == torch.int64
        for image, label in zip(images.numpy(), labels.numpy()):
            if image.tobytes() not in expected:  # colour images are mirrored at random
                image, mirrored = image[:, :, ::-1], mirrored + 1
            index, source_label = expected[image.tobytes()]
            assert label == source_label
            seen.append(index)
    assert sorted(seen) == list(range(len(source_images)))  # every image once per epoch
    assert (mirrored > 10) if family == "cifar10" else (mirrored == 0)
