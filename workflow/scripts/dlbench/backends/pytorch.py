"""PyTorch backend: a builder for the network descriptions and an eager training step."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import lmdb
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from .. import networks
from ..datasets import FAMILIES
from ..formats import lmdb_datum, shard_dirs
from ..spec import RunSpec
from . import Unavailable


def framework_version() -> str:
    return torch.__version__


def packages() -> dict:
    found = {}
    for name in ("torch", "numpy", "lmdb", "protobuf"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


class _Concat(nn.Module):
    def __init__(self, branches: list[nn.Module]):
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x):
        return torch.cat([branch(x) for branch in self.branches], dim=1)


class _Residual(nn.Module):
    def __init__(self, body: nn.Module, shortcut: nn.Module | None):
        super().__init__()
        self.body, self.shortcut = body, shortcut

    def forward(self, x):
        return self.body(x) + (x if self.shortcut is None else self.shortcut(x))


class TorchBuilder:
    """Turns a :mod:`dlbench.networks` description into an ``nn.Module``."""

    def conv(self, layer, shape):
        return nn.Conv2d(shape[0], layer.out_channels, layer.kernel, layer.stride, layer.padding, bias=layer.bias)

    def batchnorm(self, layer, shape):
        return nn.BatchNorm2d(shape[0], eps=layer.eps)

    def relu(self, layer, shape):
        return nn.ReLU(inplace=True)

    def maxpool(self, layer, shape):
        return nn.MaxPool2d(layer.kernel, layer.stride, layer.padding, ceil_mode=layer.ceil_mode)

    def globalavgpool(self, layer, shape):
        return nn.AdaptiveAvgPool2d(1)

    def flatten(self, layer, shape):
        return nn.Flatten()

    def dense(self, layer, shape):
        return nn.Linear(shape[0], layer.out_features, bias=layer.bias)

    def dropout(self, layer, shape):
        return nn.Dropout(layer.rate)

    def sequential(self, children):
        return nn.Sequential(*children)

    def concat(self, branches):
        return _Concat(branches)

    def residual(self, body, shortcut):
        return _Residual(body, shortcut)


def build(description: networks.Network) -> nn.Module:
    return networks.build(description, TorchBuilder())


def _devices(spec: RunSpec) -> list[torch.device]:
    if spec.gpus == 0:
        return [torch.device("cpu")]
    visible = torch.cuda.device_count()
    if visible < spec.gpus:
        raise Unavailable(f"{spec.device} needs {spec.gpus} CUDA GPU(s); torch {torch.__version__} sees {visible}")
    return [torch.device("cuda", index) for index in range(spec.gpus)]


class LmdbDataset(torch.utils.data.Dataset):
    """Caffe's LMDB shards of Datum records, with the reference pipelines' augmentation: a random
    crop to the network's input where the stored image is larger (ILSVRC12: shorter side 256 ->
    224), and a random horizontal mirror for colour images. Each DataLoader worker opens its own
    read-only handles and draws from its own random stream."""

    def __init__(self, shards: list[Path], input_shape: tuple, seed: int = 0):
        self.shards, self.input_shape, self.seed = [str(s) for s in shards], tuple(input_shape), seed
        self.keys, self.envs, self.rng = [], None, None
        for number, shard in enumerate(self.shards):
            env = lmdb.open(shard, readonly=True, lock=False, readahead=False)
            with env.begin() as transaction:
                self.keys += [(number, key) for key in transaction.cursor().iternext(keys=True, values=False)]
            env.close()  # an open environment must not be inherited across fork()

    def __len__(self) -> int:
        return len(self.keys)

    def _augment(self, image: np.ndarray) -> np.ndarray:
        _, height, width = self.input_shape
        if image.shape[1:] != (height, width):
            top = self.rng.integers(0, image.shape[1] - height + 1)
            left = self.rng.integers(0, image.shape[2] - width + 1)
            image = image[:, top:top + height, left:left + width]
        if image.shape[0] == 3 and self.rng.random() < 0.5:
            image = image[:, :, ::-1]
        return image

    def __getitems__(self, indices: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """A whole batch in one call: the sampler's indices -> stacked uint8 images and labels."""
        if self.envs is None:
            self.envs = [lmdb.open(shard, readonly=True, lock=False, readahead=False, meminit=False)
                         for shard in self.shards]
            worker = torch.utils.data.get_worker_info()
            self.rng = np.random.default_rng([self.seed, worker.id if worker else 0])
        images, labels, transactions = [], [], {}
        try:
            for index in indices:
                number, key = self.keys[index]
                if number not in transactions:
                    transactions[number] = self.envs[number].begin()
                image, label = lmdb_datum.decode(transactions[number].get(key))
                images.append(self._augment(image))
                labels.append(label)
        finally:
            for transaction in transactions.values():
                transaction.abort()  # read-only: ends the snapshot
        return np.stack(images), np.array(labels)

    def __getitem__(self, index: int):
        images, labels = self.__getitems__([index])
        return images[0], labels[0]


def _as_tensors(batch: tuple[np.ndarray, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = batch
    return torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64))


class _Batches:
    """Endless batches: synthetic (one resident batch) or shuffled epochs of a dataset."""

    def __init__(self, spec: RunSpec, description: networks.Network, device: torch.device):
        family = FAMILIES[spec.family]
        self.mean = torch.tensor(family.mean, device=device).view(1, -1, 1, 1) * 255
        self.std = torch.tensor(family.std, device=device).view(1, -1, 1, 1) * 255
        self.device, self.batch = device, spec.batch_size_global
        generator = torch.Generator().manual_seed(spec.seed)
        if spec.data_mode == "synthetic":
            # One resident, already normalised batch (as tf_cnn_benchmarks): compute only, no input work.
            images = torch.randint(0, 256, (self.batch, *description.input_shape), generator=generator,
                                   dtype=torch.uint8)
            labels = torch.randint(0, description.num_classes, (self.batch,), generator=generator)
            self.synthetic = (self._normalise(images.to(device)), labels.to(device))
            return
        self.synthetic = None
        shards = shard_dirs(Path(spec.data_dir), "train")
        if not shards:
            raise FileNotFoundError(f"{spec.data_dir}: no LMDB shards train-*-of-* (is the dataset converted?)")
        dataset = LmdbDataset(shards, description.input_shape, spec.seed)
        if len(dataset) < self.batch:
            raise ValueError(f"{spec.dataset} has {len(dataset)} training images, fewer than one batch of {self.batch}")
        workers = spec.loader_workers
        self.loader = DataLoader(dataset, batch_size=self.batch, shuffle=True, drop_last=True, generator=generator,
                                 num_workers=workers, persistent_workers=workers > 0,
                                 prefetch_factor=4 if workers else None, pin_memory=device.type == "cuda",
                                 collate_fn=_as_tensors)
        self.iterator = iter(self.loader)

    def _normalise(self, images: torch.Tensor) -> torch.Tensor:
        return (images.float() - self.mean) / self.std

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.synthetic is not None:
            return self.synthetic
        try:
            images, labels = next(self.iterator)
        except StopIteration:  # a new shuffled epoch
            self.iterator = iter(self.loader)
            images, labels = next(self.iterator)
        images = images.to(self.device, non_blocking=True)
        return self._normalise(images), labels.to(self.device, non_blocking=True)


class Trainer:
    def __init__(self, spec: RunSpec, description: networks.Network):
        torch.set_num_threads(spec.threads)
        torch.manual_seed(spec.seed)
        self.devices = _devices(spec)
        if self.devices[0].type == "cuda":
            torch.backends.cudnn.benchmark = True  # as the reference training scripts do
        model = build(description).to(self.devices[0])
        if len(self.devices) > 1:
            # Single-process data parallelism: the global batch is split over the GPUs.
            model = nn.DataParallel(model, device_ids=[d.index for d in self.devices])
        self.model = model.train()
        self.optimizer = torch.optim.SGD(model.parameters(), lr=spec.learning_rate, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()
        self.batches = _Batches(spec, description, self.devices[0])
        self.loss = None

    def step(self) -> None:
        images, labels = self.batches.next()
        loss = self.criterion(self.model(images), labels)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.loss = loss.detach()

    def synchronize(self) -> None:
        for device in self.devices:
            if device.type == "cuda":
                torch.cuda.synchronize(device)

    def final_loss(self) -> float | None:
        return None if self.loss is None else float(self.loss)

    def allocator_peak_mib(self) -> float | None:
        if self.devices[0].type != "cuda":
            return None
        return sum(torch.cuda.max_memory_allocated(d) for d in self.devices) / 2**20


def trainer(spec: RunSpec, description: networks.Network) -> Trainer:
    return Trainer(spec, description)
