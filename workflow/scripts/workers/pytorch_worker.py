"""The PyTorch side of a run of the thesis's PyTorch, under CPython 3.6. The thesis ran 0.4 (its Figure 4.3); PyPI's
oldest is 1.0.0 (December 2018), the release this worker runs.

It imports nothing of dlbench but its Python 3.6 modules, only the standard library, numpy, lmdb and torch, and is
written for Python 3.6 (tests check that with vermin). The runner (:mod:`dlbench.backends.pytorch_worker`) sends the
network description as JSON and drives this worker with the commands of worker_protocol.py::

    python3.6 pytorch_worker.py CONFIG.json SOCKET
    python3.6 pytorch_worker.py --describe

The network is built as today's PyTorch backend builds it (dlbench.backends.pytorch): the same modules, Glorot-uniform
weights and zero biases, the LSTM's second bias zero and untrained, eager, fp32, NCHW (1.0 has no channels_last);
nn.DataParallel over the run's GPUs. Its batches are today's backend's: Caffe's LMDB shards read by
dlbench.backends.lmdb_records in runs of consecutive records, in a DataLoader (1.0's collates single items: each item
here is one batch), normalised and resized on the device.
"""
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # beside it, also where it is loaded by its path
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Sampler, SequentialSampler
from worker_protocol import InputClock, Unavailable, dlbench_module, main, store_evaluation

lmdb_records = dlbench_module("backends/lmdb_records")  # today's PyTorch backend's reading of the shards
modules = dlbench_module("backends/torch_modules")  # and its modules


def describe():
    import lmdb
    from google import protobuf
    return {"python": platform.python_version(), "framework_version": torch.__version__,
            "packages": {"torch": torch.__version__, "numpy": np.__version__, "lmdb": lmdb.__version__,
                         "protobuf": protobuf.__version__},
            "cuda_build": torch.version.cuda}


class Flatten(nn.Module):  # nn.Flatten came with 1.2
    def forward(self, x):
        return x.view(x.size(0), -1)


def build(node):
    """One node of the description (dlbench.backends.worker.DescriptionPlanner) as a module; each leaf knows its
    input's shape (without the batch axis)."""
    op = node["op"]
    if op == "sequential":
        return nn.Sequential(*[build(child) for child in node["children"]])
    if op == "concat":
        return modules.Concat([build(branch) for branch in node["branches"]])
    if op == "residual":
        return modules.Residual(build(node["body"]), node["shortcut"] and build(node["shortcut"]))
    shape = node["in_shape"]
    layers = {
        "conv": lambda: modules.initialised(nn.Conv2d(shape[0], node["out_channels"], node["kernel"], node["stride"],
                                              node["padding"], bias=node["bias"])),
        "batchnorm": lambda: (nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d)(shape[0], eps=node["eps"]),
        "relu": lambda: nn.ReLU(inplace=True),
        "maxpool": lambda: nn.MaxPool2d(node["kernel"], node["stride"], node["padding"], ceil_mode=node["ceil_mode"]),
        "globalavgpool": lambda: nn.AdaptiveAvgPool2d(1),
        "flatten": Flatten,
        "dense": lambda: modules.initialised(nn.Linear(shape[0], node["out_features"], bias=node["bias"])),
        "dropout": lambda: nn.Dropout(node["rate"]),
        "lstm": lambda: modules.LastStep(shape[1], node["units"]),
    }
    if op not in layers:
        raise ValueError(f"unknown description node {op!r}")
    return layers[op]()


def devices(gpus):
    """The CPU, or the run's GPUs."""
    if not gpus:
        return [torch.device("cpu")]
    if torch.cuda.device_count() < gpus:
        raise Unavailable(f"torch {torch.__version__} sees {torch.cuda.device_count()} GPU(s), the run asks for {gpus}")
    return [torch.device("cuda", index) for index in range(gpus)]


def optimizer(rule, parameters, learning_rate):
    """The network's optimizer (dlbench.networks.Optimizer, as a dict) in PyTorch, as today's backend has it."""
    if rule["kind"] == "rmsprop":
        return torch.optim.RMSprop(parameters, lr=learning_rate, alpha=rule["rho"], eps=rule["epsilon"])
    return torch.optim.SGD(parameters, lr=learning_rate, momentum=rule["momentum"])


class RunBatches(Dataset):
    """Batches of the shards' records, one batch an item (``batches``: each one's record indices); each loader process
    opens its own handles and its random stream, ``stream`` (its number, which 1.0 passes only to a
    worker_init_fn)."""

    def __init__(self, records, batches):
        self.records, self.batches, self.stream = records, batches, 0

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        images, labels = self.records.batch(self.batches[index], self.stream)
        return torch.from_numpy(images), torch.from_numpy(labels)


class ShuffledOrder(Sampler):
    """A new order of the runs every epoch, from the run's seed."""

    def __init__(self, runs, seed):
        self.runs, self.generator = runs, torch.Generator()
        self.generator.manual_seed(seed)

    def __len__(self):
        return self.runs

    def __iter__(self):
        return iter(torch.randperm(self.runs, generator=self.generator).tolist())


class Batches:
    """Endless batches on the first device: synthetic (one resident batch) or shuffled epochs of the shards."""

    def __init__(self, config, device):
        self.config, self.device = config, device
        if config["synthetic_images"]:
            self.synthetic = (torch.from_numpy(np.load(config["synthetic_images"])).to(device),
                              torch.from_numpy(np.load(config["synthetic_labels"])).to(device))
            return
        self.synthetic = None
        per_channel = (1, -1, 1, 1)
        self.mean = torch.tensor(config["mean"]).view(per_channel).to(device)
        self.std = torch.tensor(config["std"]).view(per_channel).to(device)
        records = lmdb_records.LmdbRecords(config["shards"], config["stored_shape"], config["seed"])
        # the runs of consecutive records that lmdb_records.shuffled_runs takes, in an order of the sampler's
        size = len(records) - len(records) % config["batch_size"]
        runs = RunBatches(records, list(lmdb_records.in_order(size, config["batch_size"])))
        self.iterator = lmdb_records.epochs(self._loader(runs, ShuffledOrder(len(runs), config["seed"])))

    def _loader(self, batches, sampler):
        # batch_size=1 over batches: each item is already one; the collation only takes it out of its list
        def number_stream(worker):  # in the loader process, on its copy of the dataset
            batches.stream = worker

        return DataLoader(batches, batch_size=1, sampler=sampler, num_workers=self.config["loader_workers"],
                          pin_memory=self.device.type == "cuda", collate_fn=lambda items: items[0],
                          worker_init_fn=number_stream)

    def normalise(self, images):
        images = (images.to(self.device).float() - self.mean) / self.std
        channels, *size = self.config["input_shape"]
        if list(images.shape[1:]) != self.config["input_shape"]:  # a case's input_size: resized, made RGB
            images = nn.functional.interpolate(images, size=size, mode="bilinear", align_corners=False)
            images = images.expand(-1, channels, -1, -1)
        return images.contiguous()

    def next(self):
        if self.synthetic is not None:
            return self.synthetic
        images, labels = next(self.iterator)
        return self.normalise(images), labels.to(self.device)

    def test(self):
        """The test split once, in stored order, the centre crop, no mirror."""
        records = lmdb_records.LmdbRecords(self.config["test_shards"], self.config["stored_shape"], augment=False)
        batches = RunBatches(records, list(lmdb_records.in_order(len(records), self.config["batch_size"])))
        for images, labels in self._loader(batches, SequentialSampler(batches)):
            yield self.normalise(images), labels


class Worker:
    def __init__(self, config, rank):
        self.config, self.devices = config, devices(config["gpus"])
        torch.set_num_threads(config["threads"])
        torch.manual_seed(config["seed"])
        if self.devices[0].type == "cuda":
            torch.backends.cudnn.benchmark = True  # as today's backend and the reference scripts
        model = build(config["plan"])
        self.model = model.to(self.devices[0]).train()
        self.parameters = sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad)
        self.forward_model = (nn.DataParallel(self.model, device_ids=[device.index for device in self.devices])
                              if len(self.devices) > 1 else self.model)
        self.optimizer = optimizer(config["optimizer"], self.model.parameters(), config["learning_rate"])
        self.criterion = nn.CrossEntropyLoss()
        self.batches = Batches(config, self.devices[0])
        self.next_batch = InputClock(self.batches.next)
        self.loss = None

    @property
    def input_wait(self):
        return self.next_batch.seconds

    def synchronize(self):
        for device in self.devices:
            if device.type == "cuda":
                torch.cuda.synchronize(device)

    def step(self):
        images, labels = self.next_batch()
        loss = self.criterion(self.forward_model(images), labels)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.synchronize()  # the reply says the step has finished: its update's GPU work too
        self.loss = float(loss)

    def prepare_inference(self, batch_size):
        """A resident batch of the run's input for forward passes: the first ``batch_size`` images of its next."""
        self.inference_input = self.next_batch()[0][:batch_size]
        self.model.eval()

    def forward(self):
        with torch.no_grad():  # 1.0 has no inference_mode
            self.forward_model(self.inference_input)
        self.synchronize()

    def evaluate(self, directory):
        """The network's logits and the labels of every test image, stored in ``directory`` as .npy files."""
        self.model.eval()
        logits, labels = [], []
        with torch.no_grad():
            for images, batch_labels in self.batches.test():
                logits.append(self.model(images).float().cpu().numpy())
                labels.append(batch_labels.numpy())
        self.model.train()
        return store_evaluation(directory, logits, labels, self.config["num_classes"])

    def weights_sum(self):
        return float(sum(parameter.detach().double().sum() for parameter in self.model.parameters()))

    def finish(self):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], describe, Worker))
