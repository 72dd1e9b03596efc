"""Run by tests/unit/tasks/test_accuracy.py with CNTK's Python 3.6: the first 4 images of the test map file as the CNTK
worker's evaluation reader hands them to the network (centre crop, mean image subtracted, scaled to the input),
before the graph divides by the std; printed as JSON. Arguments: the worker, its config (JSON), the map file."""
import importlib.util
import json
import sys

import cntk as C
import numpy as np

spec = importlib.util.spec_from_file_location("cntk_worker", sys.argv[1])
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)

config = json.loads(sys.argv[2])
features = C.input_variable(tuple(config["input_shape"]), np.float32)
labels = C.input_variable(config["num_classes"], np.float32)
source = worker.image_source(config, sys.argv[3], train=False)
batch = source.next_minibatch(4, input_map={features: source.streams.features, labels: source.streams.labels})
images = np.asarray(batch[features].asarray(), np.float32).reshape(4, *config["input_shape"])
print(json.dumps({"images": images.tolist()}))
