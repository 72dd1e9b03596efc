"""Every format round-trips: what was written is read back and equals the source, in stored order."""
import struct

import crc32c
import numpy as np
import pytest
from dlbench import datasets, formats
from dlbench.formats import cntk_map, lmdb_datum, tfrecord_example

# RecordIO needs MXNet's environment: tests/unit/formats/test_recordio.py.
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


def _tfrecord_boundary(path, records: int) -> int:
    """The offset after the first ``records`` records: each is length (8), its CRC (4), payload, its CRC (4)."""
    data, offset = path.read_bytes(), 0
    for _ in range(records):
        offset += 16 + struct.unpack("<Q", data[offset:offset + 8])[0]
    return offset


def _cut(path, size: int) -> None:
    with open(path, "r+b") as file:
        file.truncate(size)


# How each format is damaged as a full disk or an interrupted copy leaves it (RecordIO: test_recordio.py).
DAMAGE = {
    "lmdb": lambda shard, split_dir: (_cut(shard / "data.mdb", (shard / "data.mdb").stat().st_size // 2),
                                      shard / "data.mdb"),
    "tfrecord": lambda shard, split_dir: (_cut(shard / tfrecord_example.FILE,
                                               _tfrecord_boundary(shard / tfrecord_example.FILE, 60)),
                                          shard / tfrecord_example.FILE),
    "cntk": lambda shard, split_dir: (_cut(split_dir / "train_map.txt", len(
        "".join((split_dir / "train_map.txt").read_text().splitlines(keepends=True)[:60]))),
                                      split_dir / "train_map.txt"),
}


@pytest.mark.parametrize("format_name", WORKFLOW_ENV_FORMATS)
def test_a_truncated_shard_is_refused_naming_it_and_how_to_convert_it_again(unpacked, format_name):
    family, root = unpacked
    output = root / f"{format_name}-damaged"
    formats.convert(format_name, family, root / "data", output, log=lambda line: None)
    formats.check(output)
    _, damaged = DAMAGE[format_name](output / "train-00000-of-00001", output)
    with pytest.raises(formats.DamagedShard) as refused:
        formats.check(output)
    message = str(refused.value)
    assert f"{damaged} has " in message and "its conversion wrote" in message
    assert f"snakemake --force {output}" in message


def test_a_file_changed_in_place_is_found_by_its_checksum(unpacked):
    family, root = unpacked
    output = root / "lmdb-flipped"
    formats.convert("lmdb", family, root / "data", output, log=lambda line: None)
    data = output / "test-00000-of-00001" / "data.mdb"
    content = bytearray(data.read_bytes())
    content[len(content) // 3] ^= 0xFF
    data.write_bytes(content)
    assert formats.damage(output, checksums=False) == {}  # the size alone passes
    with pytest.raises(formats.DamagedShard, match=r"data.mdb was modified after its conversion"):
        formats.check(output)


def test_readers_count_what_they_read_against_the_conversion(unpacked):
    import lmdb
    from dlbench.backends.lmdb_records import LmdbRecords

    family, root = unpacked
    output = root / "lmdb-short"
    formats.convert("lmdb", family, root / "data", output, log=lambda line: None)
    shard = output / "test-00000-of-00001"
    env = lmdb.open(str(shard))
    with env.begin(write=True) as transaction:
        transaction.delete(next(iter(transaction.cursor().iternext(values=False))))
    env.close()
    with pytest.raises(formats.DamagedShard, match=r"test-00000-of-00001: 29 images read, its conversion wrote 30"):
        list(formats.read_split("lmdb", output, "test"))
    with pytest.raises(formats.DamagedShard, match=r"29 images read, its conversion wrote 30"):
        LmdbRecords([shard], datasets.FAMILIES[family].image_shape)


def test_an_lmdb_damaged_on_every_page_is_refused_by_its_readers_naming_the_shard(unpacked):
    """Damage the checksums cannot see before reading (its time of modification kept): the readers name the shard
    that failed, the library's error and how to convert it again."""
    import os

    from dlbench.backends.lmdb_records import LmdbRecords

    family, root = unpacked
    output = root / "lmdb-garbled"
    formats.convert("lmdb", family, root / "data", output, log=lambda line: None)
    shard = output / "test-00000-of-00001"
    data = shard / "data.mdb"
    times = data.stat()
    data.write_bytes(bytes(range(256)) * (times.st_size // 256) + bytes(times.st_size % 256))
    os.utime(data, ns=(times.st_atime_ns, times.st_mtime_ns))
    words = rf"{shard}: reading it failed \(\w*Error: .*\): the data is damaged; convert it again: snakemake --force"
    with pytest.raises(formats.DamagedShard, match=words):
        list(formats.read_split("lmdb", output, "test"))
    with pytest.raises(formats.DamagedShard, match=words):
        LmdbRecords([shard], datasets.FAMILIES[family].image_shape)
