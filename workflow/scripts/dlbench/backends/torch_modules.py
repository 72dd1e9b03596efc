"""The modules PyTorch builds the descriptions' containers and LSTM of, and its initialisation: today's PyTorch backend
(dlbench.backends.pytorch) and the thesis's in its worker (workers/pytorch_worker.py, which loads this module by its
path) build the same; torch only, Python 3.6 code for PyTorch 1.0's API."""
from torch import cat, nn


class Concat(nn.Module):
    def __init__(self, branches):
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x):
        return cat([branch(x) for branch in self.branches], dim=1)


class Residual(nn.Module):
    def __init__(self, body, shortcut):
        super().__init__()
        self.body, self.shortcut = body, shortcut

    def forward(self, x):
        return self.body(x) + (x if self.shortcut is None else self.shortcut(x))


class LastStep(nn.Module):
    """``nn.LSTM`` over (batch, steps, features), its output at the last step. PyTorch adds a second bias
    vector per gate (``bias_hh``); it stays zero and untrained, so the math and the trainable parameters
    are the description's."""

    def __init__(self, features, units):
        super().__init__()
        self.lstm = nn.LSTM(features, units, batch_first=True)
        nn.init.zeros_(self.lstm.bias_hh_l0)
        self.lstm.bias_hh_l0.requires_grad_(False)

    def forward(self, x):
        return self.lstm(x)[0][:, -1]


def initialised(layer):
    """networks.INITIALISATION (Glorot-uniform weights, zero biases) on a Conv2d or Linear, in the place of PyTorch's
    default (Kaiming uniform with a = sqrt(5))."""
    nn.init.xavier_uniform_(layer.weight)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer
