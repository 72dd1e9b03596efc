"""Run by tests/unit/backends/test_backends.py inside a framework's environment: build every network of
Figure 5.1 with that framework's builder, count its trainable parameters and push one image
through it; print {"<network>/<sized for>": [parameters, output shape]} as JSON ("unavailable: <why>" where the
builder cannot build the network)."""
import json
import sys

import numpy as np
from dlbench import backends, networks

backend = backends.load(sys.argv[1])
result = {}
for name, sizings in networks.SIZINGS.items():
    for sized_for in sizings:
        description = networks.network(name, sized_for)
        try:
            model = backend.build(description)
        except backends.Unavailable as error:
            result[f"{name}/{sized_for}"] = f"unavailable: {error}"
            continue
        image = np.zeros((1, *description.input_shape), dtype=np.float32)
        result[f"{name}/{sized_for}"] = [backend.trainable_parameters(model), list(backend.forward_shape(model, image))]
print(json.dumps(result))
