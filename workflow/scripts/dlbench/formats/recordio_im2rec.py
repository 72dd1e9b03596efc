"""MXNet's RecordIO as im2rec writes it: ``data.rec`` + ``data.idx`` + ``data.lst`` per shard.

Written with ``mxnet.recordio`` (MXIndexedRecordIO, IRHeader, pack_img) inside the MXNet
environment: each record is MXNet's image-record header (flag, label, id, id2) followed by the
image encoded by OpenCV (PNG for the small datasets, JPEG quality 95 for ILSVRC12), which
``mx.io.ImageRecordIter`` decodes. ``.lst`` lines are im2rec's ``<id>\\t<label>\\t<path>``.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from ..envs import cuda_wheels
from . import RECORDIO_IDX, RECORDIO_LST, RECORDIO_REC, codec

# before MXNet loads: its CUDA build links CUDA 11's libraries by name
cuda_wheels.preload(cuda_wheels.PRELOADED["mxnet"])

import mxnet as mx

REC, IDX, LST = RECORDIO_REC, RECORDIO_IDX, RECORDIO_LST
OPENCV_FORMATS = {"png": (".png", codec.PNG_ZLIB_LEVEL), "jpeg": (".jpg", codec.JPEG_QUALITY)}  # pack_img's


def _to_opencv(image: np.ndarray) -> np.ndarray:
    """uint8 (C, H, W) RGB -> OpenCV's (H, W) grey or (H, W, C) BGR."""
    return image[0] if image.shape[0] == 1 else np.ascontiguousarray(image[::-1].transpose(1, 2, 0))


def write_shard(records, directory: Path, shard) -> None:
    image_format, quality = OPENCV_FORMATS[shard.encoding]
    writer = mx.recordio.MXIndexedRecordIO(str(directory / IDX), str(directory / REC), "w")
    lines = []
    for position, name, image, label in records:
        header = mx.recordio.IRHeader(flag=0, label=float(label), id=position, id2=0)
        writer.write_idx(position, mx.recordio.pack_img(header, _to_opencv(image), quality, image_format))
        lines.append(f"{position}\t{float(label)}\t{name}\n")
    writer.close()
    (directory / LST).write_text("".join(lines))


def read_shard(directory: Path):
    """Yield (uint8 (C, H, W) RGB image, label) in stored order."""
    reader = mx.recordio.MXIndexedRecordIO(str(directory / IDX), str(directory / REC), "r")
    try:
        for key in reader.keys:
            header, image = mx.recordio.unpack_img(reader.read_idx(key), cv2.IMREAD_UNCHANGED)
            pixels = image[None] if image.ndim == 2 else image.transpose(2, 0, 1)[::-1]
            yield np.ascontiguousarray(pixels), int(header.label)
    finally:
        reader.close()
