"""Stand-ins in the real on-disk formats; downloads verified by checksum; corrupt files never used."""
import dataclasses
import gzip
import http.server
import pickle
import re
import socket
import struct
import tarfile
import threading

import numpy as np
import pytest
from dlbench import datasets


def test_generated_mnist_is_idx_gz_with_mnist_shapes(tmp_path):
    datasets.generate("mnist", tmp_path / "raw", train_images=300, test_images=50, seed=1)
    assert sorted(p.name for p in (tmp_path / "raw").glob("*.gz")) == sorted(datasets.MNIST_IDX)
    with gzip.open(tmp_path / "raw" / "train-images-idx3-ubyte.gz", "rb") as f:
        magic, count, rows, cols = struct.unpack(">IIII", f.read(16))  # the IDX header as MNIST documents it
    assert (magic, count, rows, cols) == (0x803, 300, 28, 28)
    datasets.unpack("mnist", tmp_path / "raw", tmp_path / "mnist")
    images, labels = datasets.load_split("mnist", tmp_path / "mnist", "train")
    assert images.shape == (300, 1, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (300,) and set(labels) <= set(range(10))
    assert "not MNIST" in (tmp_path / "raw" / "GENERATED").read_text()


def test_generated_cifar10_is_the_python_pickle_tarball(tmp_path):
    datasets.generate("cifar10", tmp_path / "raw", train_images=500, test_images=100, seed=1)
    with tarfile.open(tmp_path / "raw" / "cifar-10-python.tar.gz") as tar:
        names = sorted(m.name for m in tar.getmembers())
        batch = pickle.load(tar.extractfile("cifar-10-batches-py/data_batch_1"), encoding="bytes")
    assert names == sorted(datasets.FAMILIES["cifar10"].unpacked)
    assert batch[b"data"].shape == (100, 3072) and batch[b"data"].dtype == np.uint8
    assert len(batch[b"labels"]) == 100
    datasets.unpack("cifar10", tmp_path / "raw", tmp_path / "cifar10")
    images, _ = datasets.load_split("cifar10", tmp_path / "cifar10", "train")
    assert images.shape == (500, 3, 32, 32)
    test_images, _ = datasets.load_split("cifar10", tmp_path / "cifar10", "test")
    assert test_images.shape == (100, 3, 32, 32)


class RunsACommand:
    """What a replaced batch file could hold: a pickle that calls os.system when loaded."""

    def __reduce__(self):
        import os
        return os.system, ("touch ran",)


@pytest.mark.parametrize("payload,refused", [
    (RunsACommand(), "posix.system is not in a CIFAR-10 batch"),
    ({b"data": np.array([object()], dtype=object)}, "an array of object (Python objects) is not in a CIFAR-10 batch"),
])
def test_a_cifar10_batch_that_would_run_anything_is_refused_unrun(tmp_path, monkeypatch, payload, refused):
    datasets.generate("cifar10", tmp_path / "raw", train_images=50, test_images=10, seed=1)
    datasets.unpack("cifar10", tmp_path / "raw", tmp_path / "cifar10")
    (tmp_path / "cifar10" / "cifar-10-batches-py" / "data_batch_2").write_bytes(pickle.dumps(payload, protocol=2))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=re.escape(refused)) as error:
        datasets.load_split("cifar10", tmp_path / "cifar10", "train")
    assert "unpack it again: snakemake --forcerun unpack_cifar10" in str(error.value)
    assert not (tmp_path / "ran").exists()


def test_generated_images_carry_a_learnable_class_signal(tmp_path):
    datasets.generate("mnist", tmp_path / "raw", train_images=2000, test_images=10, seed=0)
    datasets.unpack("mnist", tmp_path / "raw", tmp_path / "mnist")
    images, labels = datasets.load_split("mnist", tmp_path / "mnist", "train")
    flat = images.reshape(len(images), -1).astype(float)
    centroids = np.stack([flat[labels == c].mean(0) for c in range(10)])
    nearest = ((flat[:, None] - centroids[None]) ** 2).sum(-1).argmin(1)
    assert (nearest == labels).mean() > 0.9


@pytest.fixture
def mirrored_archive(tmp_path, monkeypatch):
    """A real-format archive on a file:// mirror, registered with its checksum."""
    mirror = tmp_path / "mirror"
    datasets.generate("mnist", mirror, train_images=20, test_images=5, seed=3)
    name = "t10k-labels-idx1-ubyte.gz"
    family = datasets.FAMILIES["mnist"]
    archives = {**family.archives, name: datasets.md5sum(mirror / name)}
    monkeypatch.setitem(datasets.FAMILIES, "mnist", dataclasses.replace(family, archives=archives))
    return mirror, name


def test_download_from_a_file_mirror_verifies_the_checksum(tmp_path, mirrored_archive):
    mirror, name = mirrored_archive
    lines = []
    datasets.download("mnist", name, tmp_path / "got" / name, [mirror.as_uri()], log=lines.append)
    assert (tmp_path / "got" / name).read_bytes() == (mirror / name).read_bytes()
    assert any("verified" in line for line in lines) and any("MiB" in line for line in lines)


def test_a_mirror_that_streams_without_end_is_stopped_at_its_archive_s_published_size(tmp_path, mirrored_archive):
    """file:///dev/zero# as a mirror (the archive's name its URL's fragment) once filled the disk."""
    mirror, name = mirrored_archive
    lines = []
    limit = int(datasets.FAMILIES["mnist"].archive_bytes[name] * datasets.DOWNLOAD_MARGIN)
    datasets.download("mnist", name, tmp_path / "got" / name, ["file:///dev/zero#", mirror.as_uri()],
                      log=lines.append)
    assert f"  failed: file:///dev/zero#/{name} sent more than {limit:,} bytes, the most its archive can be: " \
           "refused" in lines
    assert (tmp_path / "got" / name).read_bytes() == (mirror / name).read_bytes()  # the next mirror's
    assert sorted(path.name for path in (tmp_path / "got").iterdir()) == [name]  # nothing of the endless one


def test_every_downloaded_archive_has_a_published_size():
    assert {(family.name, name) for family in datasets.FAMILIES.values() for name in family.archives} == \
        {(family.name, name) for family in datasets.FAMILIES.values() for name in family.archive_bytes}


def test_a_corrupt_download_is_deleted_and_the_next_mirror_is_tried(tmp_path, mirrored_archive):
    mirror, name = mirrored_archive
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / name).write_bytes((mirror / name).read_bytes()[:-7])  # truncated
    lines = []
    datasets.download("mnist", name, tmp_path / "got" / name, [corrupt.as_uri(), mirror.as_uri()],
                      log=lines.append)
    assert any("checksum mismatch" in line for line in lines)
    assert datasets.md5sum(tmp_path / "got" / name) == datasets.FAMILIES["mnist"].archives[name]


def test_no_intact_copy_anywhere_fails_and_leaves_nothing(tmp_path, mirrored_archive):
    _, name = mirrored_archive
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / name).write_bytes(b"not an archive")
    target = tmp_path / "got" / name
    with pytest.raises(RuntimeError, match="could not fetch") as error:
        datasets.download("mnist", name, target, [corrupt.as_uri(), (tmp_path / "nowhere").as_uri()])
    expected = datasets.FAMILIES["mnist"].archives[name]
    assert f"expected {expected}, actual {datasets.md5sum(corrupt / name)}" in str(error.value)
    assert name in str(error.value)
    assert not target.exists()


def test_archives_placed_by_hand_that_fail_are_all_named_and_kept(tmp_path):
    raw = tmp_path / "raw"
    datasets.generate("mnist", raw, train_images=20, test_images=5, seed=0)  # not the real MNIST bytes
    (raw / "t10k-labels-idx1-ubyte.gz").unlink()
    before = {path.name: path.read_bytes() for path in raw.glob("*.gz")}
    status = datasets.obtain("mnist", raw, datasets.MNIST_IDX, [], "Replace or delete them.", log=lambda line: None)
    assert status["status"] == "failed"
    assert status["reason"].startswith("4 of 4 mnist archive(s) cannot be had (files already there are kept")
    for name in before:
        assert f"{raw / name}: checksum mismatch" in status["reason"]
    assert f"{raw / 't10k-labels-idx1-ubyte.gz'}: missing" in status["reason"]
    assert status["reason"].endswith("Replace or delete them.")
    assert {path.name: path.read_bytes() for path in raw.glob("*.gz")} == before


def test_obtain_verifies_what_is_there_and_downloads_what_is_missing(tmp_path, mirrored_archive):
    mirror, name = mirrored_archive
    expected = {name: datasets.FAMILIES["mnist"].archives[name]}
    here = tmp_path / "here"
    here.mkdir()
    (here / name).write_bytes((mirror / name).read_bytes())  # put there by hand, intact
    lines = []
    assert datasets.obtain("mnist", here, expected, [], "", log=lines.append)["status"] == "ok"
    assert f"verifying {here / name} (md5)" in lines
    empty = tmp_path / "empty"
    assert datasets.obtain("mnist", empty, expected, [mirror.as_uri()], "", log=lines.append)["status"] == "ok"
    assert (empty / name).read_bytes() == (mirror / name).read_bytes()
    failed = datasets.obtain("mnist", tmp_path / "other", expected, [(tmp_path / "nowhere").as_uri()], "",
                             log=lines.append)
    assert failed["status"] == "failed" and f"could not fetch {name} from any mirror" in failed["reason"]


class _ResetAfterTenBytes(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "1000")  # under the archive's published size: a download it would take
        self.end_headers()
        self.wfile.write(b"0123456789")
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args):
        pass


def test_a_connection_reset_leaves_no_partial_file_and_the_next_mirror_is_tried(tmp_path, mirrored_archive):
    mirror, name = mirrored_archive
    server = http.server.HTTPServer(("127.0.0.1", 0), _ResetAfterTenBytes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        lines = []
        datasets.download("mnist", name, tmp_path / "got" / name,
                          [f"http://127.0.0.1:{server.server_port}/", mirror.as_uri()], log=lines.append)
    finally:
        server.shutdown()
    assert "  failed: connection closed after 10 of 1,000 bytes" in lines
    assert sorted(p.name for p in (tmp_path / "got").iterdir()) == [name]  # no .part


def test_kmnist_is_an_mnist_format_dataset_with_its_own_checksums(tmp_path):
    kmnist = datasets.FAMILIES["kmnist"]
    assert kmnist.archives.keys() == datasets.MNIST_IDX.keys() and kmnist.archives != datasets.MNIST_IDX
    assert kmnist.sized_for == "mnist" and kmnist.mirrors[0].startswith("http://codh.rois.ac.jp/")
    datasets.generate("kmnist", tmp_path / "raw", train_images=64, test_images=8, seed=0)
    datasets.unpack("kmnist", tmp_path / "raw", tmp_path / "kmnist")
    images, _ = datasets.load_split("kmnist", tmp_path / "kmnist", "test")
    assert images.shape == (8, 1, 28, 28)
