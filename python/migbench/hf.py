# SPDX-License-Identifier: Apache-2.0
"""A Hugging Face Trainer callback reporting each optimizer step to migbench (import fails
without transformers):

    from migbench.hf import MigbenchCallback
    trainer = Trainer(..., callbacks=[MigbenchCallback()])

Samples per step are this process's: per_device_train_batch_size x gradient_accumulation_steps
(TrainingArguments). tokens_per_sample, when given, reports tokens instead (sequence length for
fixed-length batches).
"""

from transformers import TrainerCallback

from .progress import progress


class MigbenchCallback(TrainerCallback):
    """Calls migbench.step() at each optimizer step's end (TrainerCallback.on_step_end)."""

    def __init__(self, tokens_per_sample=None, reporter=None):
        self.tokens_per_sample = tokens_per_sample
        self.reporter = reporter or progress()

    def on_step_end(self, args, state, control, **kwargs):
        samples = int(args.per_device_train_batch_size) * int(args.gradient_accumulation_steps)
        if self.tokens_per_sample:
            self.reporter.step(tokens=samples * int(self.tokens_per_sample))
        else:
            self.reporter.step(samples=samples)
        return control
