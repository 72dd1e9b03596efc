"""Run with an MXNet environment's Python (the thesis's 1.2.0 on CPython 3.6, or today's): the MXNet worker's own
code (workers/mxnet_worker.py, WORKER), loaded by its path.

    mxnet_worker_checks.py WORKER parameters PLANS.json   build every {case: [input shape, description plan]};
                                                          print {case: [trainable parameters, output shape]}
                                                          or {case: "unavailable: why"}
    mxnet_worker_checks.py WORKER optimizer RULES          two steps of the worker's optimizer for each rule of
                                                          {kind: [rule, rate]} on loss = w . x from w = 0 (a
                                                          constant gradient x); print {kind: w}
"""
import importlib.util
import json
import sys

spec = importlib.util.spec_from_file_location("mxnet_worker", sys.argv[1])
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)
import mxnet as mx

found = {}
if sys.argv[2] == "parameters":
    with open(sys.argv[3]) as stream:
        plans = json.load(stream)
    for case, (input_shape, plan) in sorted(plans.items()):
        try:
            net = worker.build(plan)
        except worker.Unavailable as error:
            found[case] = f"unavailable: {error}"
            continue
        net.initialize(mx.init.Xavier())
        output = net(mx.nd.zeros([2] + input_shape))
        found[case] = [worker.trainable_parameters(net), list(output.shape[1:])]
else:
    for kind, (rule, rate) in json.loads(sys.argv[3]).items():
        update = mx.optimizer.get_updater(mx.optimizer.create(*worker.optimizer(rule, rate)[:1],
                                                              **worker.optimizer(rule, rate)[1]))
        weights = mx.nd.zeros(2)
        for _ in range(2):
            update(0, mx.nd.array([1.0, 2.0]), weights)
        found[kind] = weights.asnumpy().tolist()
print(json.dumps(found))
