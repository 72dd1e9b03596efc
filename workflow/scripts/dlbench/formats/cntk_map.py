"""CNTK's ImageReader input: PNG folders, ``<split>_map.txt`` and an OpenCV-XML mean file.

Map lines are ``<path>\\t<label>`` with paths relative to the format directory (CNTK resolves
them against its working directory; the CNTK runner starts there). The mean image is stored as
CNTK's CIFAR-10 example writes it (``cifar_utils.saveMean``): OpenCV FileStorage XML, one row of
float32 in OpenCV's in-memory layout (height, width, channels in BGR order), which is how CNTK's
reader (OpenCV) sees the decoded images it subtracts it from.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from . import Progress, png, shuffled_order

MEAN_FILE = "mean.xml"


def write_split(images: np.ndarray, labels: np.ndarray, directory: Path, split: str, seed: int,
                progress: Progress) -> None:
    (directory / split).mkdir()
    lines = []
    for position, index in enumerate(shuffled_order(len(images), seed)):
        relative = f"{split}/{position:05d}.png"
        (directory / relative).write_bytes(png.encode(images[index]))
        lines.append(f"{relative}\t{int(labels[index])}\n")
        if (position + 1) % 5_000 == 0:
            progress.update(position + 1)
    (directory / f"{split}_map.txt").write_text("".join(lines))
    if split == "train":
        write_mean(images, directory / MEAN_FILE)


def read_split(directory: Path, split: str):
    for line in (directory / f"{split}_map.txt").read_text().splitlines():
        relative, label = line.split("\t")
        yield png.decode((directory / relative).read_bytes()), int(label)


def write_mean(images: np.ndarray, path: Path) -> None:
    _, channels, height, width = images.shape
    mean = images.mean(axis=0, dtype=np.float64).astype(np.float32)  # (C, H, W), RGB
    opencv_layout = mean[::-1].transpose(1, 2, 0) if channels == 3 else mean.transpose(1, 2, 0)
    root = ET.Element("opencv_storage")
    ET.SubElement(root, "Channel").text = str(channels)
    ET.SubElement(root, "Row").text = str(height)
    ET.SubElement(root, "Col").text = str(width)
    matrix = ET.SubElement(root, "MeanImg", type_id="opencv-matrix")
    ET.SubElement(matrix, "rows").text = "1"
    ET.SubElement(matrix, "cols").text = str(mean.size)
    ET.SubElement(matrix, "dt").text = "f"
    ET.SubElement(matrix, "data").text = " ".join(f"{value:e}" for value in opencv_layout.ravel())
    ET.ElementTree(root).write(path, xml_declaration=True, encoding="utf-8")


def read_mean(path: Path) -> np.ndarray:
    """The mean image back as float32 (C, H, W) in RGB order."""
    root = ET.parse(path).getroot()
    channels, height, width = (int(root.findtext(tag)) for tag in ("Channel", "Row", "Col"))
    data = np.array(root.find("MeanImg").findtext("data").split(), dtype=np.float32)
    mean = data.reshape(height, width, channels).transpose(2, 0, 1)
    return mean[::-1].copy() if channels == 3 else mean
