"""Run by tests/unit/backends/test_backends.py inside a framework's environment: train LeNet for a few steps
on two devices of this CPU (TensorFlow: two logical CPU devices under MirroredStrategy; MXNet:
two CPU contexts and a kvstore), on the resident synthetic batch and on generated data read by
the framework's own reader; print the replicas, the per-replica batch and the losses as JSON
(MXNet: also what a batch larger than the data gives)."""
import dataclasses
import json
import sys

from dlbench import networks
from dlbench.spec import RunSpec

framework, data_dir = sys.argv[1], sys.argv[2]
description = networks.network("lenet", "mnist")
result = {}
for mode in ("synthetic", "generated"):
    spec = RunSpec(framework, f"mnist-{mode}", "lenet", "cpu", 1, 32, 20, 0, 0.01, 2,
                   data_dir=data_dir if mode == "generated" else None)
    if framework == "tensorflow":
        import tensorflow as tf
        from dlbench.backends import tensorflow as backend

        if mode == "synthetic":  # before TensorFlow initialises
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        harness = backend.Harness(spec, description, devices=["/cpu:0", "/cpu:1"])
        replicas = harness.strategy.num_replicas_in_sync
        images, _ = harness.next_batch()
        per_replica = [int(part.shape[0]) for part in harness.strategy.experimental_local_results(images)]
    else:
        import mxnet as mx
        from dlbench.backends import mxnet as backend

        harness = backend.Harness(spec, description, contexts=[mx.cpu(0), mx.cpu(1)])
        parts = harness.next_batch()
        replicas, per_replica = len(parts), [int(images.shape[0]) for images, _ in parts]
    losses = []
    for _ in range(spec.iterations):
        harness.step()
        harness.synchronize()
        losses.append(harness.final_loss())
    result[mode] = {"replicas": replicas, "per_replica_batch": per_replica, "losses": losses,
                    "data_parallel": harness.data_parallel}
if framework == "mxnet":
    # 256 images in batches of 100: the third batch ends the epoch and must hold no blank filler.
    spec = RunSpec(framework, "mnist-generated", "lenet", "cpu", 1, 100, 1, 0, 0.01, 2, data_dir=data_dir)
    batches = backend.RecordBatches(spec, description)
    images = [image.asnumpy() for _ in range(3) for image in batches.next()[0]]
    result["blank_images"] = sum(float(image.min()) == float(image.max()) for image in images)
    try:
        backend.RecordBatches(dataclasses.replace(spec, batch_size_global=512), description)
    except ValueError as error:
        result["oversized_batch"] = str(error)
print(json.dumps(result))
