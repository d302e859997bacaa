#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GPT-2 language-model training and fine-tuning: the study's foundation-model workloads.

A GPT-2 decoder written out in full (no downloads): pre-LayerNorm blocks, learned position
embeddings, GELU MLP, token embedding tied to the output head. Trains with AdamW on synthetic
tokens (default) or a byte-level text file (--data FILE). Reports tokens through
MIGBENCH_PROGRESS_FD. See docs/workloads.md for flags, units, exit codes and parameter counts.

Parameter counts follow the GPT-2 convention: the tied token embedding is counted once and the
position embedding is included, which gives the published 124M (small) and 1.56B (xl).
"""

import argparse
import inspect
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import EXIT_USAGE, WorkloadExit, note  # noqa: E402

PROG = "gpt.py"
GPT2_VOCAB = 50257

# name: (n_layer, n_head, n_embd, block_size, vocab_size). small..xl are the published GPT-2
# configurations; tiny is for CPU tests (byte-level vocabulary, about 0.9M parameters).
SIZES = {
    "tiny": (4, 4, 128, 256, 256),
    "small": (12, 12, 768, 1024, GPT2_VOCAB),
    "medium": (24, 16, 1024, 1024, GPT2_VOCAB),
    "large": (36, 20, 1280, 1024, GPT2_VOCAB),
    "xl": (48, 25, 1600, 1024, GPT2_VOCAB),
}
# Default batch sizes (sequences per step) per size: CPU, GPU.
DEFAULT_BATCH = {"tiny": (8, 64), "small": (2, 16), "medium": (1, 8), "large": (1, 4), "xl": (1, 2)}

_torch = None


def analytic_param_count(n_layer, n_head, n_embd, block_size, vocab_size):
    """Parameters of the model below, from its configuration alone (tied head counted once)."""
    del n_head  # heads split n_embd; they do not change the count
    d = n_embd
    per_layer = (2 * d            # ln_1
                 + d * 3 * d + 3 * d  # attention qkv
                 + d * d + d      # attention output projection
                 + 2 * d          # ln_2
                 + d * 4 * d + 4 * d  # MLP up
                 + 4 * d * d + d)  # MLP down
    return vocab_size * d + block_size * d + n_layer * per_layer + 2 * d


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description="Train or fine-tune a GPT-2 model and report "
                                "tokens/s to migbench.")
    p.add_argument("--size", choices=list(SIZES), default="small", help="default small (124M)")
    p.add_argument("--seq-len", type=_common.positive_int, default=None,
                   help="tokens per sequence (default: the model's context, 1024; 256 for tiny)")
    p.add_argument("--data", metavar="FILE", default=None,
                   help="train on a text file, byte-level (token = byte value) instead of synthetic tokens")
    p.add_argument("--lr", type=_common.positive_float, default=None,
                   help="peak learning rate (default 6e-4; 3e-5 with --finetune)")
    p.add_argument("--warmup", type=_common.nonneg_int, default=None,
                   help="linear warmup steps (default 100; 10 with --finetune)")
    p.add_argument("--lr-decay-steps", type=_common.positive_int, default=None,
                   help="cosine decay horizon (default: --steps when given, else 5000; 200 with --finetune)")
    p.add_argument("--weight-decay", type=_common.nonneg_float, default=0.1)
    p.add_argument("--dropout", type=_common.nonneg_float, default=None,
                   help="dropout rate (default 0.0; 0.1 with --finetune)")
    p.add_argument("--grad-clip", type=_common.nonneg_float, default=1.0, help="0 = off; default 1.0")
    p.add_argument("--save", metavar="CKPT", default=None, help="write the weights here when the run ends")
    p.add_argument("--finetune", action="store_true",
                   help="fine-tuning run: low LR, short warmup, cosine decay, 200 steps by default")
    p.add_argument("--init-from", metavar="CKPT", default=None, help="load weights from a --save checkpoint")
    p.add_argument("--no-fused-attention", action="store_true",
                   help="use the written-out attention even where scaled_dot_product_attention exists")
    _common.add_common_args(p)
    args = p.parse_args(argv)
    n_layer, n_head, n_embd, block, vocab = SIZES[args.size]
    if args.seq_len is None:
        args.seq_len = block
    if args.seq_len > block:
        p.error("--seq-len %d: GPT-2 %s has a context of %d tokens" % (args.seq_len, args.size, block))
    if args.batch_size is None:
        args.batch_size = DEFAULT_BATCH[args.size][0 if args.device == "cpu" else 1]
    if args.dropout is not None and args.dropout >= 1:
        p.error("--dropout %g: must be below 1" % args.dropout)
    if args.init_from is not None and not args.finetune:
        p.error("--init-from needs --finetune")
    if args.init_from is not None and not os.path.isfile(args.init_from):
        p.error("--init-from %s: no such file" % args.init_from)
    if args.data is not None and not os.path.isfile(args.data):
        p.error("--data %s: no such file" % args.data)
    if args.finetune:
        defaults = dict(lr=3e-5, warmup=10, dropout=0.1)
        if args.steps is None and args.duration is None:
            args.steps = 200
    else:
        defaults = dict(lr=6e-4, warmup=100, dropout=0.0)
    default_warmup = args.warmup is None
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.lr_decay_steps is None:
        args.lr_decay_steps = args.steps if args.steps else (200 if args.finetune else 5000)
    if default_warmup:  # a short run gets a proportionally short default warmup
        args.warmup = min(args.warmup, args.lr_decay_steps // 10)
    return args


def define_model(torch):
    nn = torch.nn
    F = torch.nn.functional
    has_sdpa = hasattr(F, "scaled_dot_product_attention")

    class CausalSelfAttention(nn.Module):
        def __init__(self, cfg, device):
            super().__init__()
            d = cfg["n_embd"]
            self.n_head = cfg["n_head"]
            self.c_attn = nn.Linear(d, 3 * d, device=device)
            self.c_proj = nn.Linear(d, d, device=device)
            self.dropout = cfg["dropout"]
            self.fused = has_sdpa and cfg["fused"]
            if not self.fused:
                t = cfg["block_size"]
                mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=device)).view(1, 1, t, t)
                self.register_buffer("mask", mask, persistent=False)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(x).split(c, dim=2)
            hs = c // self.n_head
            q = q.view(b, t, self.n_head, hs).transpose(1, 2)
            k = k.view(b, t, self.n_head, hs).transpose(1, 2)
            v = v.view(b, t, self.n_head, hs).transpose(1, 2)
            p = self.dropout if self.training else 0.0
            if self.fused:
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
                att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
                att = F.dropout(F.softmax(att, dim=-1), p=p, training=self.training)
                y = att @ v
            y = y.transpose(1, 2).contiguous().view(b, t, c)
            return F.dropout(self.c_proj(y), p=p, training=self.training)

    class MLP(nn.Module):
        def __init__(self, cfg, device):
            super().__init__()
            d = cfg["n_embd"]
            self.c_fc = nn.Linear(d, 4 * d, device=device)
            self.c_proj = nn.Linear(4 * d, d, device=device)
            self.dropout = cfg["dropout"]

        def forward(self, x):
            x = self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))
            return F.dropout(x, p=self.dropout, training=self.training)

    class Block(nn.Module):
        def __init__(self, cfg, device):
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg["n_embd"], device=device)
            self.attn = CausalSelfAttention(cfg, device)
            self.ln_2 = nn.LayerNorm(cfg["n_embd"], device=device)
            self.mlp = MLP(cfg, device)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, cfg, device=None):
            super().__init__()
            self.cfg = dict(cfg)
            d = cfg["n_embd"]
            self.wte = nn.Embedding(cfg["vocab_size"], d, device=device)
            self.wpe = nn.Embedding(cfg["block_size"], d, device=device)
            self.h = nn.ModuleList([Block(cfg, device) for _ in range(cfg["n_layer"])])
            self.ln_f = nn.LayerNorm(d, device=device)
            self.lm_head = nn.Linear(d, cfg["vocab_size"], bias=False, device=device)
            self.lm_head.weight = self.wte.weight  # tied: one tensor, counted once
            self.apply(self._init)
            for name, param in self.named_parameters():
                if name.endswith("c_proj.weight"):  # GPT-2's scaled init of residual projections
                    nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * cfg["n_layer"]))

        @staticmethod
        def _init(module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets):
            t = idx.shape[1]
            pos = torch.arange(t, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.reshape(-1))

    return GPT, has_sdpa


def model_config(args, fused=True):
    n_layer, n_head, n_embd, block, vocab = SIZES[args.size]
    return dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block, vocab_size=vocab,
                dropout=args.dropout, fused=fused)


def count_on_meta(torch, GPT, cfg):
    """Builds the model on the meta device (no memory) and counts its parameters; None where this
    torch cannot build modules on the meta device."""
    try:
        model = GPT(cfg, device="meta")
    except (TypeError, RuntimeError, NotImplementedError):
        return None
    return _common.count_params(model)


def print_params(torch, GPT, args):
    cfg = model_config(args)
    analytic = analytic_param_count(cfg["n_layer"], cfg["n_head"], cfg["n_embd"], cfg["block_size"],
                                    cfg["vocab_size"])
    built = count_on_meta(torch, GPT, cfg)
    how = "meta-device build"
    if built is None or args.size in ("tiny", "small"):
        # Small enough to build for real: the analytic figure must equal a real model's count.
        built = _common.count_params(GPT(cfg))
        how = "real build"
    if built != analytic:
        raise WorkloadExit(_common.EXIT_ERROR, "parameter count mismatch for %s: %d from the %s, %d from the "
                           "configuration" % (args.size, built, how, analytic))
    n_emb = cfg["vocab_size"] * cfg["n_embd"]
    n_pos = cfg["block_size"] * cfg["n_embd"]
    sys.stdout.write("gpt2-%s: %d parameters (%s); tied token embedding counted once, position embedding "
                     "included; without embeddings %d; checked against a %s\n"
                     % (args.size, analytic, _common.human_count(analytic), analytic - n_emb - n_pos, how))


def load_tokens(torch, path, vocab):
    with open(path, "rb") as f:
        raw = f.read()
    if not raw:
        raise WorkloadExit(EXIT_USAGE, "--data %s: the file is empty" % path)
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8).long()
    if vocab < 256:
        data = data % vocab
    return data


def lr_at(args, step):
    """Linear warmup then cosine decay to a tenth of the peak over --lr-decay-steps."""
    peak = args.lr
    floor = peak / 10
    if args.warmup and step < args.warmup:
        return peak * (step + 1) / args.warmup
    if step >= args.lr_decay_steps:
        return floor
    span = max(args.lr_decay_steps - args.warmup, 1)
    ratio = (step - args.warmup) / span
    return floor + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (peak - floor)


def make_optimizer(torch, model, args, dev):
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": args.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    kw = dict(lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    fused = dev.type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
    if fused:
        kw["fused"] = True
    return torch.optim.AdamW(groups, **kw), fused


def save_checkpoint(torch, model, args, step, path):
    tmp = path + ".tmp"
    # Tensors, strings and ints only: loadable with torch.load(weights_only=True) from torch 1.13 on.
    torch.save({"model": model.state_dict(), "size": args.size, "step": int(step)}, tmp)
    os.replace(tmp, path)


def read_checkpoint(torch, args, dev):
    """Reads and checks a --save checkpoint before any model is built."""
    try:
        try:
            ckpt = torch.load(args.init_from, map_location=dev, weights_only=True)  # torch >= 1.13
        except TypeError:
            ckpt = torch.load(args.init_from, map_location=dev)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is a bad argument
        raise WorkloadExit(EXIT_USAGE, "--init-from %s: not a readable checkpoint (%s)" % (args.init_from, exc))
    if not isinstance(ckpt, dict) or "model" not in ckpt or "size" not in ckpt:
        raise WorkloadExit(EXIT_USAGE, "--init-from %s: not a gpt.py --save checkpoint" % args.init_from)
    if ckpt["size"] != args.size:
        raise WorkloadExit(EXIT_USAGE, "--init-from %s: a %s checkpoint, but --size is %s"
                           % (args.init_from, ckpt["size"], args.size))
    return ckpt


def main(argv):
    global _torch
    args = parse_args(argv)
    import torch

    _torch = torch
    GPT, has_sdpa = define_model(torch)
    if args.print_params:
        print_params(torch, GPT, args)
        return
    threads = _common.cpu_threads(args)
    if threads:
        torch.set_num_threads(threads)
    _common.seed_everything(torch, args.seed)
    dev = _common.resolve_device(torch, args.device)
    prec = _common.Precision(torch, dev, args.amp, PROG)
    fused_attn = has_sdpa and not args.no_fused_attention
    cfg = model_config(args, fused=fused_attn)

    data = None
    if args.data is not None:
        data = load_tokens(torch, args.data, cfg["vocab_size"])
        if data.numel() < args.seq_len + 2:
            raise WorkloadExit(EXIT_USAGE, "--data %s: %d tokens, fewer than one sequence of %d + 1"
                               % (args.data, data.numel(), args.seq_len))

    ckpt = read_checkpoint(torch, args, dev) if args.init_from else None
    model = GPT(cfg, device=dev)
    n_params = _common.count_params(model)
    origin = "random init"
    if ckpt is not None:
        try:
            model.load_state_dict(ckpt["model"])
        except RuntimeError as exc:
            raise WorkloadExit(EXIT_USAGE, "--init-from %s: weights do not fit gpt2-%s (%s)"
                               % (args.init_from, args.size, str(exc).splitlines()[0]))
        origin = "weights from %s (step %s)" % (args.init_from, ckpt.get("step"))
        del ckpt
    elif args.finetune:
        note(PROG, "--finetune without --init-from: this is fine-tuning-SHAPED (learning-rate schedule and "
                 "run length) but starts from RANDOM weights, not a pretrained model")
    model.train()
    opt, fused_opt = make_optimizer(torch, model, args, dev)
    run_model = _common.maybe_compile(torch, model, args.compile)

    note(PROG, "model=gpt2-%s params=%d (%s) layers=%d heads=%d embd=%d vocab=%d device=%s batch=%d seq_len=%d "
         "tokens/step=%d amp=%s attention=%s optimizer=AdamW%s mode=%s lr=%g warmup=%d decay_steps=%d "
         "dropout=%g data=%s steps=%s duration=%s seed=%d compile=%s torch=%s" % (
             args.size, n_params, _common.human_count(n_params), cfg["n_layer"], cfg["n_head"], cfg["n_embd"],
             cfg["vocab_size"], _common.device_description(torch, dev), args.batch_size, args.seq_len,
             args.batch_size * args.seq_len, prec.name, "fused-sdpa" if fused_attn else "written-out",
             "(fused)" if fused_opt else "", "finetune from " + origin if args.finetune else "pretrain",
             args.lr, args.warmup, args.lr_decay_steps, args.dropout,
             "bytes of %s (%d tokens)" % (args.data, data.numel()) if data is not None else "synthetic",
             args.steps or "none", "%gs" % args.duration if args.duration else "none", args.seed,
             "yes" if args.compile else "no", torch.__version__))

    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    if data is not None:
        data = data.to(dev)

    def batch():
        if data is None:
            seq = torch.randint(0, cfg["vocab_size"], (args.batch_size, args.seq_len + 1), generator=gen)
            seq = seq.to(dev, non_blocking=True)
        else:
            starts = torch.randint(0, data.numel() - args.seq_len - 1, (args.batch_size,), generator=gen)
            idx = starts.to(dev).unsqueeze(1) + torch.arange(args.seq_len + 1, device=dev)
            seq = data[idx]
        return seq[:, :-1], seq[:, 1:]

    params = [p for p in model.parameters() if p.requires_grad]

    def step(i):
        for group in opt.param_groups:
            group["lr"] = lr_at(args, i)
        x, y = batch()
        opt.zero_grad(set_to_none=True)
        with prec.autocast():
            loss = run_model(x, y)
        prec.backward_step(loss, opt, params, args.grad_clip)
        return loss.detach()

    steps, _units, _secs = _common.train_loop(torch, PROG, dev, args, step, args.batch_size * args.seq_len, "tokens")
    if args.save:
        save_checkpoint(torch, model, args, steps, args.save)
        note(PROG, "saved weights to %s" % args.save)


if __name__ == "__main__":
    sys.exit(_common.run_main(PROG, lambda: main(sys.argv[1:]), lambda: _torch))
