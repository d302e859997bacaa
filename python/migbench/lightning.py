# SPDX-License-Identifier: Apache-2.0
"""A Lightning callback reporting each training batch to migbench (import fails without
lightning or pytorch_lightning):

    from migbench.lightning import MigbenchCallback
    trainer = lightning.Trainer(..., callbacks=[MigbenchCallback()])

Samples per batch are migbench.loops.batch_size(batch) unless samples= is given (an int or a
function of the batch); tokens= likewise reports tokens.
"""

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:
    from pytorch_lightning.callbacks import Callback

from .loops import batch_size
from .progress import progress


class MigbenchCallback(Callback):
    """Calls migbench.step() at each training batch's end (Callback.on_train_batch_end)."""

    def __init__(self, samples=None, tokens=None, reporter=None):
        super().__init__()
        self.samples = samples
        self.tokens = tokens
        self.reporter = reporter or progress()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        def amount(fn):
            return fn(batch) if callable(fn) else fn

        if self.samples is None and self.tokens is None:
            self.reporter.step(samples=batch_size(batch))
        else:
            self.reporter.step(samples=amount(self.samples), tokens=amount(self.tokens))
