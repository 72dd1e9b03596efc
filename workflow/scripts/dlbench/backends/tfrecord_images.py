"""A TFRecord shard's image as every TensorFlow backend decodes it, today's (dlbench.backends.tensorflow) and the
thesis's 1.9 in its worker (workers/tensorflow_worker.py, which loads this module by its path): Python 3.6 code, the
TensorFlow module and the few ops whose names changed between TF 1 and TF 2 passed in (:class:`Ops`)."""
import collections

# decode(encoded, channels): a 3-D uint8 image; crop(image, size): a random crop; centre(image, height, width):
# the centre crop (or pad); resize(image, size): bilinear
Ops = collections.namedtuple("Ops", "parse feature decode crop centre resize")
FEATURES = ("image/encoded", "image/class/label")


def decoder(tf, ops, shape, stored, resize, mean, std, augment):
    """A record's normalised float32 image (NHWC ``shape``: height, width, channels) and int64 label: randomly
    cropped and mirrored (colour images) for training, centre-cropped for evaluation; with a case's ``resize``
    (its input_size), resized instead of cropped, and grey (``stored`` channels 1) made RGB."""
    height, width, channels = shape
    features = {FEATURES[0]: ops.feature([], tf.string), FEATURES[1]: ops.feature([], tf.int64)}

    def decode(record):
        example = ops.parse(record, features)
        image = ops.decode(example[FEATURES[0]], stored)
        if resize:
            image = ops.resize(image, (height, width))
        elif augment:
            image = ops.crop(image, (height, width, stored))
        else:
            image = ops.centre(image, height, width)
        if augment and stored == 3:
            image = tf.image.random_flip_left_right(image)
        image = (tf.cast(image, tf.float32) - mean) / std
        return (tf.image.grayscale_to_rgb(image) if stored < channels else image), example[FEATURES[1]]
    return decode
