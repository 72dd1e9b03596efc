"""Caffe's LMDB shards read back for training, framework-neutral (numpy and lmdb only): the
PyTorch backend wraps it in a DataLoader, Keras 3 reads it in-process on any backend, and the thesis's PyTorch
reads it in its worker (workers/pytorch_worker.py, which loads this module by its path): Python 3.6 code."""
from pathlib import Path

import lmdb
import numpy as np

try:
    from ..formats import check_count, lmdb_datum, unreadable_shard
except ImportError:  # loaded by its path in a worker, whose runner has read the shards' keys with dlbench's own checks
    from worker_protocol import dlbench_module

    lmdb_datum = dlbench_module("formats/lmdb_datum")

    def check_count(shard, read):
        pass

    def unreadable_shard(shard, error):
        return error


class LmdbRecords:
    """Caffe's LMDB shards of Datum records, with the reference pipelines' augmentation: a random
    crop to the network's input where the stored image is larger (ILSVRC12: shorter side 256 ->
    224), and a random horizontal mirror for colour images; for evaluation (``augment`` false) the
    centre crop and no mirror. Index ``i`` is the ``i``-th record in stored order over the shards.
    Handles are opened at the first batch, so that each loader worker process opens its own."""

    def __init__(self, shards, input_shape, seed=0, augment=True):
        self.shards, self.input_shape, self.seed = [str(s) for s in shards], tuple(input_shape), seed
        self.augment = augment
        self.keys, self.envs, self.rng = [], None, None
        for number, shard in enumerate(self.shards):
            try:
                env = lmdb.open(shard, readonly=True, lock=False, readahead=False)
                with env.begin() as transaction:
                    keys = [(number, key) for key in transaction.cursor().iternext(keys=True, values=False)]
                env.close()  # an open environment must not be inherited across fork()
            except lmdb.Error as error:
                raise unreadable_shard(Path(shard), error) from error
            check_count(Path(shard), len(keys))
            self.keys += keys

    def __len__(self):
        return len(self.keys)

    def _augment(self, image):
        _, height, width = self.input_shape
        if image.shape[1:] != (height, width):
            rows, columns = image.shape[1] - height, image.shape[2] - width
            top, left = ((self.rng.integers(0, rows + 1), self.rng.integers(0, columns + 1)) if self.augment
                         else (rows // 2, columns // 2))
            image = image[:, top:top + height, left:left + width]
        if self.augment and image.shape[0] == 3 and self.rng.random() < 0.5:
            image = image[:, :, ::-1]
        return image

    def _values(self, indices):
        """The stored values, in the order asked; a cursor steps to the next record where the
        indices run on in the same shard (as :func:`shuffled_runs` makes them) instead of searching."""
        transactions, cursors, previous = [], {}, None
        try:
            for index in indices:
                number, key = self.keys[index]
                try:
                    if number not in cursors:
                        transactions.append(self.envs[number].begin())
                        cursors[number] = transactions[-1].cursor()
                    cursor = cursors[number]
                    if previous != (number, index - 1) or not cursor.next():
                        cursor.set_key(key)
                    value = cursor.value()
                except lmdb.Error as error:
                    raise unreadable_shard(Path(self.shards[number]), error) from error
                previous = (number, index)
                yield value
        finally:
            for transaction in transactions:
                transaction.abort()  # read-only: ends the snapshot

    def batch(self, indices, stream=0):
        """uint8 images (N, C, H, W) and int64 labels of the records ``indices``. The first call
        opens the read-only handles and the random stream ``stream`` (a loader worker's number)."""
        if self.envs is None:
            self.envs = [lmdb.open(shard, readonly=True, lock=False, readahead=False, meminit=False)
                         for shard in self.shards]
            self.rng = np.random.default_rng([self.seed, stream])
        images = np.empty((len(indices),) + self.input_shape, dtype=np.uint8)
        labels = np.empty(len(indices), dtype=np.int64)
        for position, value in enumerate(self._values(indices)):
            image, labels[position] = lmdb_datum.decode(value)
            images[position] = self._augment(image)
        return images, labels


def in_order(size, batch_size):
    """Every record once, in stored order, in batches (the last one shorter): an evaluation's pass."""
    for start in range(0, size, batch_size):
        yield list(range(start, min(start + batch_size, size)))


def shuffled_runs(size, batch_size, order):
    """One epoch of batches of consecutive stored records, the runs in ``order`` (a permutation
    of ``range(size // batch_size)``; the last partial run is dropped).

    The records were stored in a shuffled order (convert_imageset --shuffle), and Caffe's Data
    layer reads them in that order; reading runs instead of scattered keys saves the LMDB page
    and B-tree walks that cost LeNet-sized steps on CPU about a tenth of their time."""
    for run in order:
        yield list(range(run * batch_size, (run + 1) * batch_size))


def epochs(loader):
    """A loader's batches without end: epoch after epoch, each a new pass (a new shuffled order)."""
    while True:
        yield from loader
