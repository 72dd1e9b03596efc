"""ILSVRC12 (ImageNet 2012) from the user's own archives, and a miniature stand-in for tests.

ImageNet cannot be downloaded without an account: the user puts the three archives below into
the directory the config names (``ilsvrc12.directory``). They are checked against their
published MD5 sums and never unpacked: an index records where every JPEG lies inside the tars
(the training tar holds one uncompressed tar per class), so every conversion shard reads just
its own images with positioned reads, in any order, on any node.

Classes are the 1000 leaf synsets of the devkit's ``meta.mat``, numbered in WNID order (as
Caffe's synsets.txt, TF's build_imagenet_data and torchvision number them); validation labels
come from the devkit's ground truth, which lists ILSVRC2012_IDs, not those indices. The
validation set is the ``test`` split here. Images are resized so that the shorter side is 256
pixels (bilinear), as the reference ImageNet pipelines do before cropping 224.
"""
from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

from .. import files

TRAIN_TAR, VAL_TAR, DEVKIT = "ILSVRC2012_img_train.tar", "ILSVRC2012_img_val.tar", "ILSVRC2012_devkit_t12.tar.gz"
ARCHIVES = {  # published MD5 sums (image-net.org; the same in torchvision's ImageNet)
    TRAIN_TAR: "1d675b47d978889d74fa0da5fadfb00e",
    VAL_TAR: "29b22e2961454d5413ddabcf34fc5622",
    DEVKIT: "fa75699e90414af021442c21a62c3abf",
}
SPLIT_ARCHIVES = {"train": TRAIN_TAR, "test": VAL_TAR}
META = "ILSVRC2012_devkit_t12/data/meta.mat"
VAL_TRUTH = "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt"
SHORTER_SIDE = 256
INDEX_FILES = ("classes.tsv", "train.tsv", "test.tsv")


# ------------------------------------------------------------------ index


def read_devkit(devkit: Path) -> tuple[list[tuple[str, str]], dict[int, str], list[int]]:
    """(classes as (WNID, words) in WNID order, ILSVRC2012_ID -> WNID, validation ILSVRC2012_IDs)."""
    import scipy.io

    with tarfile.open(devkit, "r:gz") as tar:
        synsets = scipy.io.loadmat(io.BytesIO(tar.extractfile(META).read()), squeeze_me=True)["synsets"]
        truth = [int(line) for line in tar.extractfile(VAL_TRUTH).read().split()]
    leaves = [s for s in synsets if int(s["num_children"]) == 0]
    wnid_of = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in leaves}
    classes = sorted((str(s["WNID"]), str(s["words"])) for s in leaves)
    return classes, wnid_of, truth


def build_index(archive_dir: Path, index_dir: Path, log=print) -> dict:
    """Write classes.tsv, train.tsv and test.tsv (the user's archives were verified by
    :func:`dlbench.datasets.obtain`, and are only read).

    Index lines are ``<name>\\t<byte offset in the split's tar>\\t<size>\\t<label>``.
    """
    archive_dir, index_dir = Path(archive_dir), Path(index_dir)
    classes, wnid_of, truth = read_devkit(archive_dir / DEVKIT)
    label_of = {wnid: index for index, (wnid, _) in enumerate(classes)}
    entries = {"train": [], "test": []}
    with tarfile.open(archive_dir / TRAIN_TAR, "r:") as outer:
        for class_tar in outer:
            wnid = class_tar.name.removesuffix(".tar")
            with tarfile.open(fileobj=outer.extractfile(class_tar), mode="r:") as inner:
                entries["train"] += [(member.name, class_tar.offset_data + member.offset_data, member.size,
                                      label_of[wnid]) for member in inner if member.isfile()]
            log(f"indexed {wnid}: {len(entries['train'])} training images so far")
    with tarfile.open(archive_dir / VAL_TAR, "r:") as tar:
        members = sorted((m for m in tar if m.isfile()), key=lambda m: m.name)
    if len(members) != len(truth):
        raise ValueError(f"{VAL_TAR} holds {len(members)} images but the devkit labels {len(truth)}")
    entries["test"] = [(m.name, m.offset_data, m.size, label_of[wnid_of[ilsvrc_id]])
                       for m, ilsvrc_id in zip(members, truth)]
    index_dir.mkdir(parents=True, exist_ok=True)
    files.write_text(index_dir / "classes.tsv",
                     "".join(f"{i}\t{wnid}\t{words}\n" for i, (wnid, words) in enumerate(classes)))
    for split, rows in entries.items():
        files.write_text(index_dir / f"{split}.tsv", "".join("\t".join(map(str, row)) + "\n" for row in rows))
    counts = {split: len(rows) for split, rows in entries.items()}
    log(f"index: {len(classes)} classes, {counts['train']} training and {counts['test']} validation images")
    return counts


def chosen_classes(wnids: list[str], classes: int | list[str]) -> list[str]:
    """A subset of the classes (WNIDs in WNID order): ``classes`` of them evenly spaced over that order (10 of
    1000: the 1st, 101st, … 901st, across the hierarchy rather than ten fish), or the WNIDs listed."""
    if isinstance(classes, int):
        if not 2 <= classes <= len(wnids):
            raise ValueError(f"classes: {classes} of {len(wnids)} classes; allowed: 2 to {len(wnids)}")
        return [wnids[index * len(wnids) // classes] for index in range(classes)]
    unknown = sorted(set(classes) - set(wnids))
    if unknown:
        raise ValueError(f"classes: {', '.join(unknown)} not among the dataset's {len(wnids)} classes "
                         f"(devkit WNIDs, e.g. {wnids[0]})")
    return sorted(classes)


def select_classes(index_dir: Path, subset_dir: Path, classes: int | list[str], log=print) -> dict:
    """The index of a class subset: its classes numbered 0..k-1 in WNID order, and the images of those classes
    only (their byte ranges in the same archives), so that it is converted like the whole dataset."""
    index_dir, subset_dir = Path(index_dir), Path(subset_dir)
    rows = [line.split("\t") for line in (index_dir / "classes.tsv").read_text().splitlines()]
    wnids = [wnid for _, wnid, _ in rows]
    chosen = chosen_classes(wnids, classes)
    new_label = {str(wnids.index(wnid)): str(label) for label, wnid in enumerate(chosen)}
    subset_dir.mkdir(parents=True, exist_ok=True)
    files.write_text(subset_dir / "classes.tsv", "".join(f"{new_label[index]}\t{wnid}\t{words}\n"
                                                         for index, wnid, words in rows if index in new_label))
    counts = {}
    for split in SPLIT_ARCHIVES:
        kept = []
        for line in (index_dir / f"{split}.tsv").read_text().splitlines():
            *where, label = line.split("\t")
            if label in new_label:
                kept.append("\t".join([*where, new_label[label]]) + "\n")
        files.write_text(subset_dir / f"{split}.tsv", "".join(kept))
        counts[split] = len(kept)
    log(f"subset: {len(chosen)} of {len(wnids)} classes ({', '.join(chosen)}), {counts['train']} training and "
        f"{counts['test']} validation images")
    return counts


# ------------------------------------------------------------------ read


def load_resized(data: bytes, shorter_side: int = SHORTER_SIDE) -> np.ndarray:
    """A JPEG (or one of ImageNet's few PNG/CMYK/grey files) as uint8 RGB (3, H, W), shorter side resized."""
    image = Image.open(io.BytesIO(data))
    scale = shorter_side / min(image.size)
    size = (max(shorter_side, round(image.width * scale)), max(shorter_side, round(image.height * scale)))
    image.draft("RGB", size)  # JPEG: decode at a reduced DCT scale when that still covers the target size
    image = image.convert("RGB").resize(size, Image.BILINEAR)
    return np.asarray(image).transpose(2, 0, 1)


class Source:
    """The indexed archives as a conversion source: ``record(split, i)`` reads and resizes one image."""

    def __init__(self, archive_dir: Path, index_dir: Path):
        self.tars = {split: Path(archive_dir) / name for split, name in SPLIT_ARCHIVES.items()}
        self.index, self.files = {}, {}
        for split in SPLIT_ARCHIVES:
            rows = [line.split("\t") for line in (Path(index_dir) / f"{split}.tsv").read_text().splitlines()]
            self.index[split] = [(name, int(offset), int(size), int(label)) for name, offset, size, label in rows]

    def count(self, split: str) -> int:
        return len(self.index[split])

    def record(self, split: str, index: int) -> tuple[str, np.ndarray, int]:
        if split not in self.files:
            self.files[split] = os.open(self.tars[split], os.O_RDONLY)
        name, offset, size, label = self.index[split][index]
        return name, load_resized(os.pread(self.files[split], size, offset)), label


# ------------------------------------------------------------------ miniature stand-in


def _member(tar: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    tar.addfile(info, io.BytesIO(payload))


def _photo(rng: np.random.Generator, template: np.ndarray, mode: str, image_format: str) -> bytes:
    """A class template stretched to a random photo-like size, plus noise, in the given mode."""
    height, width = (int(v) for v in rng.integers(160, 400, size=2))
    base = Image.fromarray(template).resize((width, height), Image.BILINEAR)
    noisy = np.clip(np.asarray(base, dtype=np.int16) + rng.integers(-40, 41, (height, width, 3)), 0, 255)
    buffer = io.BytesIO()
    Image.fromarray(noisy.astype(np.uint8)).convert(mode).save(buffer, format=image_format, quality=90)
    return buffer.getvalue()


def generate(raw_dir: Path, classes: int, train_images: int, test_images: int, seed: int) -> dict:
    """A miniature ILSVRC12 in the real layout: a tar of per-class tars of JPEGs, a flat validation
    tar and a devkit whose meta.mat numbers the classes out of WNID order (as the real one does) and
    holds non-leaf synsets too. Like the real data, a few files are grey, CMYK, or PNG named .JPEG.
    Returns the truth: each class's WNID and every image's class, in generation order."""
    import scipy.io

    rng = np.random.default_rng(seed)
    raw_dir = Path(raw_dir)
    raw_dir.mkdir(parents=True, exist_ok=True)
    wnids = [f"n{number:08d}" for number in rng.choice(10**7, size=classes, replace=False)]
    templates = rng.integers(0, 256, size=(classes, 8, 8, 3), dtype=np.uint8)
    odd_files = {0: ("L", "JPEG"), 1: ("CMYK", "JPEG"), 2: ("RGB", "PNG")}  # image number -> (mode, format)
    train_labels = rng.integers(0, classes, size=train_images)
    with files.replaced(raw_dir / TRAIN_TAR) as stream, tarfile.open(fileobj=stream, mode="w") as outer:
        for label, wnid in enumerate(wnids):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as inner:
                for number in np.flatnonzero(train_labels == label):
                    mode, image_format = odd_files.get(int(number), ("RGB", "JPEG"))
                    _member(inner, f"{wnid}_{number}.JPEG", _photo(rng, templates[label], mode, image_format))
            _member(outer, f"{wnid}.tar", buffer.getvalue())
    val_labels = rng.integers(0, classes, size=test_images)
    with files.replaced(raw_dir / VAL_TAR) as stream, tarfile.open(fileobj=stream, mode="w") as tar:
        for number, label in enumerate(val_labels, 1):
            _member(tar, f"ILSVRC2012_val_{number:08d}.JPEG", _photo(rng, templates[label], "RGB", "JPEG"))
    ilsvrc_ids = rng.permutation(classes) + 1  # label i (WNID order) has ILSVRC2012_ID ilsvrc_ids[i]
    fields = ["ILSVRC2012_ID", "WNID", "words", "gloss", "num_children", "children", "wordnet_height",
              "num_train_images"]
    synsets = np.zeros((classes + 2, 1), dtype=[(field, "O") for field in fields])
    for row, label in enumerate(np.argsort(ilsvrc_ids)):  # stored in ILSVRC2012_ID order
        synsets[row, 0] = (row + 1, wnids[label], f"generated class {label}", "", 0, np.zeros((1, 0)), 0,
                           int((train_labels == label).sum()))
    for row in (classes, classes + 1):  # non-leaf synsets follow the leaves, as in the real meta.mat
        synsets[row, 0] = (row + 1, f"n9{row:07d}", "generated parent", "", 2, np.array([[1, 2]]), 1, 0)
    meta = io.BytesIO()
    scipy.io.savemat(meta, {"synsets": synsets})
    truth = "".join(f"{ilsvrc_ids[label]}\n" for label in val_labels)
    with files.replaced(raw_dir / DEVKIT) as stream, tarfile.open(fileobj=stream, mode="w:gz") as tar:
        _member(tar, META, meta.getvalue())
        _member(tar, VAL_TRUTH, truth.encode())
    files.write_text(raw_dir / "GENERATED", f"Generated miniature ILSVRC12 (seed {seed}, {classes} classes); not "
                     "ImageNet.\n")
    return {"wnids": wnids, "train_labels": train_labels.tolist(), "test_labels": val_labels.tolist()}
