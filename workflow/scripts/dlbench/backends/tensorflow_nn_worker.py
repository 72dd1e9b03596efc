"""Seed 002's hand-written network in the thesis's TensorFlow (``tensorflow-nn-1.9``, inference only): the
description in raw ``tf.nn`` ops on variables in a TF 1.9 graph and session, in the TensorFlow 1.9 worker (its
``RawBuilder``), on that worker's input; beside TF 1.9's ``tf.layers`` (``tensorflow-1.9``, which the API-cost table
divides by), as today's ``tensorflow-nn`` stands beside today's TensorFlow.
"""
from __future__ import annotations

from .tensorflow_worker import Harness as LayersHarness
from .tensorflow_worker import describe, gpu_code  # noqa: F401 - the backend interface: the TF 1.9 worker's


class Harness(LayersHarness):
    INFERENCE_IDIOM = ("session.run of raw tf.nn ops (conv2d, max_pool, matmul) on variables, on a resident batch, in "
                       "the TensorFlow 1.9 worker (each call includes the runner's socket round trip)")
