"""The two conversion jobs the rules run, in the current interpreter or a framework's venv.

``{"kind": "convert", ...}``: a whole in-memory dataset (MNIST, CIFAR10), one shard per split.
``{"kind": "shard", ...}``: one shard of ILSVRC12, read from the indexed archives.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .. import paths
from . import Shard, convert, write_shard


def execute(job: dict) -> None:
    if job["kind"] == "convert":
        stats = convert(job["format"], job["family"], Path(job["data_dir"]), Path(job["output"]), job["seed"])
        for split, numbers in stats.items():
            print(f"{split}: {numbers['images']} images in {numbers['seconds']:.1f} s "
                  f"({numbers['images_per_second']:,.0f} images/s)", flush=True)
    elif job["kind"] == "shard":
        from ..datasets.ilsvrc12 import Source

        shard = Shard(**{**job["shard"], "image_shape": tuple(job["shard"]["image_shape"])})
        stats = write_shard(shard, Source(job["archive_dir"], job["index_dir"]), Path(job["output"]))
        print(f"{shard.name}: {stats['images']} images in {stats['seconds']:.1f} s "
              f"({stats['images_per_second']:,.1f} images/s)", flush=True)
    else:
        raise ValueError(f"unknown conversion job kind {job['kind']!r}")


def run(job: dict, environment: str | None) -> None:
    """Run ``job`` here, or in the framework venv whose status file ``environment`` names."""
    from ..envs import status

    built = status(environment)
    if built["status"] != "ok":
        raise RuntimeError(built["reason"])
    run_with(job, built["python"])


def run_with(job: dict, python: str) -> None:
    """Run ``job`` with the interpreter ``python`` (this one: in this process)."""
    if Path(python).absolute() == Path(sys.executable).absolute():
        execute(job)
        return
    env = paths.with_package(dict(os.environ))
    sys.stdout.flush()
    subprocess.run([python, "-m", "dlbench.formats", json.dumps(job)], env=env, check=True,
                   stdout=sys.stdout, stderr=sys.stderr)
