"""Run by tests/unit/tasks/test_accuracy.py inside a framework's environment: an accuracy run (two epochs) through the
runner's epochs and evaluations, on a dataset in the framework's own format, then the evaluation once more;
print the epochs and both evaluations as JSON.

    accuracy_in_framework.py FRAMEWORK DATA_DIR TRAIN_IMAGES DATASET NETWORK BATCH LEARNING_RATE
"""
import json
import sys

from dlbench import backends, datasets
from dlbench.spec import RunSpec
from dlbench.tasks import accuracy

framework, data_dir, train_images, dataset, network, batch, rate = sys.argv[1:]
train_images, batch, epochs = int(train_images), int(batch), 2
spec = RunSpec(framework, dataset, network, "cpu", 1, batch, epochs * (train_images // batch), 0, float(rate), 2,
               data_dir=data_dir, task="accuracy", epochs=epochs, target_accuracy=0.9)
harness = backends.load(framework).Harness(spec, datasets.description(network, spec.family))
result = accuracy.run(harness, spec, progress=lambda *args, **kwargs: None)
print(json.dumps({"epochs": result["epochs"], "steps": len(result["iteration_seconds"]),
                  "again": accuracy.evaluate(harness), "window": result["timed_window"]}))
