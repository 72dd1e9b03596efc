"""Caffe's LMDB: one ``caffe.Datum`` per image under keys in a stable shuffled order.

The ``Datum`` message is built from its definition in caffe.proto (fields 1-7) at import time,
so neither protoc nor Caffe is needed to write or read it. Like Caffe's convert_mnist_data,
convert_cifar_data and convert_imageset (without --encoded), ``data`` holds the raw uint8 pixels in
channel-height-width order; ILSVRC12 images keep their own (resized) height and width, which
Caffe's Data layer crops to the network's input. Python 3.6 code: the thesis's PyTorch reads it in its worker.
"""
from pathlib import Path

import lmdb
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

MAP_SIZE = 1 << 40  # a sparse upper bound; LMDB only uses what it writes


def _datum_class():
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="dlbench/caffe_datum.proto", package="caffe", syntax="proto2")
    message = proto.message_type.add(name="Datum")
    for name, number, kind, label in (
        ("channels", 1, field.TYPE_INT32, field.LABEL_OPTIONAL),
        ("height", 2, field.TYPE_INT32, field.LABEL_OPTIONAL),
        ("width", 3, field.TYPE_INT32, field.LABEL_OPTIONAL),
        ("data", 4, field.TYPE_BYTES, field.LABEL_OPTIONAL),
        ("label", 5, field.TYPE_INT32, field.LABEL_OPTIONAL),
        ("float_data", 6, field.TYPE_FLOAT, field.LABEL_REPEATED),
        ("encoded", 7, field.TYPE_BOOL, field.LABEL_OPTIONAL),
    ):
        message.field.add(name=name, number=number, type=kind, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName("caffe.Datum")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)  # protobuf before 3.20 (CPython 3.6's)


Datum = _datum_class()


def write_shard(records, directory: Path, shard) -> None:
    """Write (position, name, uint8 (C, H, W) image, label) records as the LMDB environment ``directory``."""
    env = lmdb.open(str(directory), map_size=MAP_SIZE, subdir=True, meminit=False, map_async=True)
    transaction, datum = env.begin(write=True), Datum()
    for count, (position, name, image, label) in enumerate(records, 1):
        datum.channels, datum.height, datum.width = image.shape
        datum.data, datum.label = image.tobytes(), label
        transaction.put(f"{position:08d}_{name}".encode(), datum.SerializeToString())
        if count % 10_000 == 0:  # bounded transactions keep memory flat
            transaction.commit()
            transaction = env.begin(write=True)
    transaction.commit()
    env.sync()
    env.close()


def read_shard(directory: Path):
    """Yield (image as uint8 (C, H, W), label) in stored order."""
    env = lmdb.open(str(directory), readonly=True, lock=False, subdir=True)
    try:
        with env.begin() as transaction:
            for _, value in transaction.cursor():
                yield decode(value)
    finally:
        env.close()


def decode(value: bytes):
    datum = Datum.FromString(value)
    if datum.encoded:
        raise ValueError("encoded (JPEG/PNG) Datum records are not read here")
    image = np.frombuffer(datum.data, dtype=np.uint8).reshape(datum.channels, datum.height, datum.width)
    return image, datum.label
