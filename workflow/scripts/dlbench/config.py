"""The benchmark matrix from a validated config, with the thesis's Figure 4.5 as defaults.

The JSON schema (config/schema.yaml) checks types, names and ranges; this module checks what
a schema cannot (a network that has no variant for a dataset, warm-up longer than the run)
and names the offending key and what is allowed.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass

from .datasets import FAMILIES
from .networks import REGISTRY, VARIANTS
from .spec import dataset_label, parse_device, variant_label

# Figure 4.5 per (dataset family, network): a family takes the values of the variant sized for it
# (KMNIST, not in the thesis, MNIST's: same size and shape).
FIGURE_4_5 = {(family, name): entry.figure_4_5[spec.variant] for family, spec in FAMILIES.items()
              for name, entry in REGISTRY.items() if spec.variant in entry.figure_4_5}


class ConfigError(ValueError):
    pass


def default_warmup(iterations: int) -> int:
    return max(10, math.ceil(0.1 * iterations))


@dataclass(frozen=True)
class Case:
    """One (framework, dataset, network, device, variant) cell; it runs ``repetitions`` times."""

    framework: str
    dataset: str  # label: mnist, mnist-generated, imagenet-synthetic, ...
    family: str
    data_mode: str
    network: str
    device: str
    batch_size: int
    iterations: int
    warmup_iterations: int
    learning_rate: float
    precision: str = "fp32"
    compile: bool = False

    @property
    def variant(self) -> str:
        return variant_label(self.precision, self.compile)


def check_devices(config: dict) -> None:
    """Before the schema, whose pattern error shows only a regular expression: the device in words."""
    for index, device in enumerate(config.get("devices") or []):
        try:
            parse_device(str(device))
        except ValueError as error:
            raise ConfigError(f"devices[{index}]: {error}") from None


def cases(config: dict) -> list[Case]:
    found: dict[tuple, Case] = {}
    for index, bench in enumerate(config["benchmarks"]):
        where = f"benchmarks[{index}]"
        family, mode = bench["dataset"], bench.get("data", "real")
        variant = FAMILIES[family].variant
        if family == "imagenet" and mode == "real" and not config.get("ilsvrc12", {}).get("directory"):
            raise ConfigError(f"{where}.data: real ImageNet needs ilsvrc12.directory (the directory holding "
                              "your ILSVRC2012 archives; it cannot be downloaded); without it allowed: "
                              "generated, synthetic")
        for network in bench["networks"]:
            if variant not in VARIANTS[network]:
                allowed = ", ".join(n for n, v in VARIANTS.items() if variant in v)
                raise ConfigError(f"{where}.networks: {network} has no {family} variant; "
                                  f"allowed for {family}: {allowed}")
            batch, iterations, rate = FIGURE_4_5[(family, network)]
            batch = bench.get("batch_size", batch)
            iterations = bench.get("iterations", iterations)
            rate = bench.get("learning_rate", rate)
            warmup = bench.get("warmup_iterations", default_warmup(iterations))
            if warmup >= iterations:
                raise ConfigError(f"{where}.warmup_iterations: {warmup} warm-up iterations leave no timed "
                                  f"iteration of {iterations} ({network}); allowed: 0 to {iterations - 1}")
            for device in config["devices"]:
                processes, gpus = parse_device(device)
                shares = processes * max(gpus, 1)  # the global batch is split over them
                if batch % shares:
                    raise ConfigError(f"{where}.batch_size: {batch} cannot be split over {shares} devices "
                                      f"({network} on {device}); allowed: a multiple of {shares}")
                for framework, precision, compile in itertools.product(
                        config["frameworks"], config["precisions"], config["compile"]):
                    label = dataset_label(family, mode)
                    key = (framework, label, network, device, variant_label(precision, compile))
                    if key in found:
                        raise ConfigError(f"{where}: {network} on {label} is listed twice")
                    found[key] = Case(framework, label, family, mode, network, device,
                                      batch, iterations, warmup, rate, precision, compile)
    return list(found.values())


def config_sha256(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def mirrors(config: dict, family: str) -> list[str]:
    return config.get("mirrors", {}).get(family) or list(FAMILIES[family].mirrors)
