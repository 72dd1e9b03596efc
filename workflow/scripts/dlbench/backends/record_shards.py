"""MXNet's RecordIO shards as its backends read them, today's (dlbench.backends.mxnet) and the thesis's in its worker
(workers/mxnet_worker.py, which loads this module by its path): standard library only, Python 3.6 code."""
import random


class ShardBatches:
    """Endless batches from ``mx.io.ImageRecordIter``s over the shards (``open_shard(shard)`` makes one), shard after
    shard in a new random order every epoch."""

    def __init__(self, shards, open_shard, seed):
        self.shards, self.open_shard = shards, open_shard
        self.rng, self.order, self.iterator = random.Random(seed), [], None

    def next(self):
        """The next batch's images and labels."""
        while True:
            if self.iterator is None:
                if not self.order:
                    self.order = self.rng.sample(range(len(self.shards)), len(self.shards))
                self.iterator = self.open_shard(self.shards[self.order.pop()])
            try:
                batch = self.iterator.next()  # batch.pad counts the images taken again from the start
                return batch.data[0], batch.label[0]
            except StopIteration:
                if len(self.shards) == 1:
                    self.iterator.reset()  # a new shuffled epoch of the only shard
                else:
                    self.iterator = None


def test_batches(iterators):
    """The test split once, from one iterator per shard in stored order; a shard's last batch without the images
    ``round_batch`` took again from its start."""
    for iterator in iterators:
        for batch in iterator:
            kept = batch.data[0].shape[0] - batch.pad
            yield batch.data[0][:kept], batch.label[0][:kept]
