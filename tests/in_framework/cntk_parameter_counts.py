"""Run with the CNTK environment's Python 3.6: build every plan in PLANS.json with the CNTK worker's
own code and print {case: [trainable parameters, output shape]} as JSON."""
import importlib.util
import json
import sys

spec = importlib.util.spec_from_file_location("cntk_worker", sys.argv[1])
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)
with open(sys.argv[2]) as stream:
    plans = json.load(stream)
counts = {}
for case, (input_shape, plan) in sorted(plans.items()):
    model = worker.build(plan, worker.input_of(input_shape))
    counts[case] = [worker.trainable_parameters(model), list(model.shape)]
print(json.dumps(counts))
