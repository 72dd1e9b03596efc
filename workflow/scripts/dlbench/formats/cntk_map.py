"""CNTK's ImageReader input: image files, ``<split>_map.txt`` and an OpenCV-XML mean file.

Each shard holds its images and its own map lines; :func:`join_split` joins them into the map
file CNTK reads. Map lines are ``<path>\\t<label>`` with paths relative to the format directory
(CNTK resolves them against its working directory; the CNTK runner starts there). The mean image
is stored as CNTK's CIFAR-10 example writes it (``cifar_utils.saveMean``): OpenCV FileStorage XML,
one row of float32 in OpenCV's in-memory layout (height, width, channels in BGR order), which is
how CNTK's reader (OpenCV) sees the decoded images it subtracts it from. It has the networks'
input shape: ILSVRC12 images are centre-cropped to it first.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from . import codec

MEAN_FILE = "mean.xml"
SHARD_MAP, SHARD_SUM = "map.txt", "pixel_sum.npy"


def center_crop(image: np.ndarray, height: int, width: int) -> np.ndarray:
    top, left = (image.shape[1] - height) // 2, (image.shape[2] - width) // 2
    return image[:, top:top + height, left:left + width]


def write_shard(records, directory: Path, shard) -> None:
    lines, pixel_sum = [], np.zeros(shard.image_shape, dtype=np.float64)
    extension = codec.EXTENSIONS[shard.encoding]
    for position, _, image, label in records:
        relative = f"{shard.name}/{position:08d}.{extension}"
        (directory / Path(relative).name).write_bytes(codec.encode(image, shard.encoding))
        lines.append(f"{relative}\t{label}\n")
        pixel_sum += center_crop(image, *shard.image_shape[1:])
    (directory / SHARD_MAP).write_text("".join(lines))
    np.save(directory / SHARD_SUM, pixel_sum)


def read_shard(directory: Path):
    for line in (directory / SHARD_MAP).read_text().splitlines():
        relative, label = line.split("\t")
        yield codec.decode((directory.parent / relative).read_bytes()), int(label)


def join_split(format_dir: Path, split: str, shards: list[Path]) -> None:
    (format_dir / f"{split}_map.txt").write_text("".join((shard / SHARD_MAP).read_text() for shard in shards))
    if split == "train":
        count = sum(len((shard / SHARD_MAP).read_text().splitlines()) for shard in shards)
        write_mean(sum(np.load(shard / SHARD_SUM) for shard in shards) / count, format_dir / MEAN_FILE)


def write_mean(mean: np.ndarray, path: Path) -> None:
    """Store a (C, H, W) RGB mean image as CNTK reads it. CNTK's reader decodes every image in colour
    (OpenCV's IMREAD_COLOR) and subtracts the mean before it keeps one channel of a grayscale input:
    a grayscale mean is stored as three equal channels (one fails in OpenCV: "neither 'array op
    array' ... same number of channels")."""
    mean = np.repeat(mean, 3, axis=0) if mean.shape[0] == 1 else mean
    channels, height, width = mean.shape
    mean = mean.astype(np.float32)
    opencv_layout = mean[::-1].transpose(1, 2, 0) if channels == 3 else mean.transpose(1, 2, 0)
    root = ET.Element("opencv_storage")
    ET.SubElement(root, "Channel").text = str(channels)
    ET.SubElement(root, "Row").text = str(height)
    ET.SubElement(root, "Col").text = str(width)
    matrix = ET.SubElement(root, "MeanImg", type_id="opencv-matrix")
    ET.SubElement(matrix, "rows").text = "1"
    ET.SubElement(matrix, "cols").text = str(mean.size)
    ET.SubElement(matrix, "dt").text = "f"
    values = [f"{value:e}" for value in opencv_layout.ravel()]
    # Short lines, as OpenCV writes them: its 3.1 parser (CNTK's reader) fails on a long one ("Too long
    # string"), and refuses ElementTree's XML declaration, whose quotes are single.
    ET.SubElement(matrix, "data").text = "".join(f"\n{' '.join(values[i:i + 8])}" for i in range(0, len(values), 8))
    ET.indent(root)
    path.write_text('<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n")


def read_mean(path: Path) -> np.ndarray:
    """The mean image back as float32 (C, H, W) in RGB order."""
    root = ET.parse(path).getroot()
    channels, height, width = (int(root.findtext(tag)) for tag in ("Channel", "Row", "Col"))
    data = np.array(root.find("MeanImg").findtext("data").split(), dtype=np.float32)
    mean = data.reshape(height, width, channels).transpose(2, 0, 1)
    return mean[::-1].copy() if channels == 3 else mean
