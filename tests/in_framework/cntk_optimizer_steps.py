"""Run with the CNTK environment's Python 3.6: two steps of the worker's learner for each rule in
RULES.json ({kind: [rule, rate]}) on loss = w . x (a constant gradient x) from w = 0; print {kind: w} as JSON."""
import importlib.util
import json
import sys

import numpy as np

spec = importlib.util.spec_from_file_location("cntk_worker", sys.argv[1])
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)
import cntk

found = {}
for kind, (rule, rate) in json.loads(sys.argv[2]).items():
    x = cntk.input_variable(2)
    w = cntk.parameter(shape=(2,), init=0.0)
    loss = cntk.reduce_sum(cntk.element_times(w, x))
    trainer = cntk.Trainer(None, loss, [worker.make_learner(rule, [w], rate)])
    for _ in range(2):
        trainer.train_minibatch({x: np.array([[1.0, 2.0]] * 4, np.float32)})  # the mean gradient of 4 samples
    found[kind] = w.value.tolist()
print(json.dumps(found))
