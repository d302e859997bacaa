#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Image-classifier training: the study's vision workloads (torchvision models, from scratch).

Trains ResNet-18/50, DenseNet-121/169 or Inception-v3 with SGD on synthetic ImageNet-shaped
batches (default) or on an image folder (--data DIR, torchvision ImageFolder layout). Reports
images through MIGBENCH_PROGRESS_FD. See docs/workloads.md for flags, units and exit codes.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from _common import EXIT_USAGE, WorkloadExit, note  # noqa: E402

PROG = "vision.py"

# Default image size per model: ImageNet's 224, and 299 for Inception-v3.
MODELS = {
    "resnet18": 224,
    "resnet50": 224,
    "densenet121": 224,
    "densenet169": 224,
    "inception_v3": 299,
}
NUM_CLASSES = 1000
# Inception-v3's auxiliary classifier needs a 17x17 Mixed_6e map, i.e. inputs of at least 299.
INCEPTION_AUX_MIN = 299
INCEPTION_MIN = 75

_torch = None


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description="Train a torchvision image classifier from "
                                "scratch and report images/s to migbench.")
    p.add_argument("--model", choices=sorted(MODELS), default="resnet50", help="default resnet50")
    p.add_argument("--image-size", type=_common.positive_int, default=None,
                   help="square input size (default 224, 299 for inception_v3)")
    p.add_argument("--data", metavar="DIR", default=None,
                   help="train on an ImageFolder directory instead of synthetic batches")
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format")
    p.add_argument("--lr", type=_common.positive_float, default=None,
                   help="SGD learning rate (default 0.1 x batch/256)")
    p.add_argument("--no-aux", action="store_true",
                   help="inception_v3 without its auxiliary classifier (automatic below 299 px)")
    _common.add_common_args(p)
    args = p.parse_args(argv)
    if args.batch_size is None:
        args.batch_size = 32 if args.device == "cpu" else 128
    if args.image_size is None:
        args.image_size = MODELS[args.model]
    if args.model == "inception_v3" and args.image_size < INCEPTION_MIN:
        p.error("--image-size %d: inception_v3 needs at least %d" % (args.image_size, INCEPTION_MIN))
    if args.image_size < 32:
        p.error("--image-size %d: the models need at least 32" % args.image_size)
    if args.data is not None and not os.path.isdir(args.data):
        p.error("--data %s: not a directory" % args.data)
    return args


def build_model(torch, torchvision, name, aux, device=None):
    kwargs = {"num_classes": NUM_CLASSES}
    if name == "inception_v3":
        kwargs.update(aux_logits=aux, init_weights=True)
    ctor = getattr(torchvision.models, name)
    try:
        model = ctor(weights=None, **kwargs)  # torchvision >= 0.13
    except TypeError:
        model = ctor(pretrained=False, **kwargs)  # older torchvision
    if device is not None:
        model = model.to(device)
    return model


def inception_aux(args):
    if args.model != "inception_v3":
        return False
    if args.no_aux:
        return False
    if args.image_size < INCEPTION_AUX_MIN:
        note(PROG, "inception_v3 at %d px: the auxiliary classifier needs >= %d px, so it is left out "
             "(parameter count without aux)" % (args.image_size, INCEPTION_AUX_MIN))
        return False
    return True


def real_data_iter(torch, torchvision, args, dev):
    from torchvision import datasets, transforms

    tf = transforms.Compose([
        transforms.RandomResizedCrop(args.image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    try:
        ds = datasets.ImageFolder(args.data, transform=tf)
    except (FileNotFoundError, RuntimeError) as exc:
        raise WorkloadExit(EXIT_USAGE, "--data %s: %s" % (args.data, exc))
    if len(ds.classes) > NUM_CLASSES:
        raise WorkloadExit(EXIT_USAGE, "--data %s: %d classes, the models have %d outputs"
                           % (args.data, len(ds.classes), NUM_CLASSES))
    if len(ds) < args.batch_size:
        raise WorkloadExit(EXIT_USAGE, "--data %s: %d images, fewer than one batch of %d"
                           % (args.data, len(ds), args.batch_size))
    kw = dict(batch_size=args.batch_size, shuffle=True, drop_last=True, num_workers=args.workers,
              pin_memory=dev.type == "cuda")
    if args.workers > 0:
        kw.update(persistent_workers=True, worker_init_fn=_common.ignore_term_in_worker)
    loader = torch.utils.data.DataLoader(ds, **kw)
    nonblock = dev.type == "cuda"
    while True:
        for images, labels in loader:
            yield images.to(dev, non_blocking=nonblock), labels.to(dev, non_blocking=nonblock)


def synthetic_data_iter(torch, args, dev):
    # One fixed random batch, made on the device: the job measures training compute, not input.
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=gen).to(dev)
    labels = torch.randint(0, NUM_CLASSES, (args.batch_size,), generator=gen).to(dev)
    if args.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    while True:
        yield images, labels


def main(argv):
    global _torch
    args = parse_args(argv)
    import torch
    import torchvision

    _torch = torch
    aux = inception_aux(args)
    if args.print_params:
        model = build_model(torch, torchvision, args.model, aux)
        n = _common.count_params(model)
        sys.stdout.write("%s: %d parameters (%s)%s\n" % (args.model, n, _common.human_count(n),
                                                         ", with aux classifier" if aux else ""))
        return
    threads = _common.cpu_threads(args)
    if threads:
        torch.set_num_threads(threads)
    _common.seed_everything(torch, args.seed)
    dev = _common.resolve_device(torch, args.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    prec = _common.Precision(torch, dev, args.amp, PROG)

    model = build_model(torch, torchvision, args.model, aux, dev)
    n_params = _common.count_params(model)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    lr = args.lr if args.lr is not None else 0.1 * args.batch_size / 256
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    crit = torch.nn.CrossEntropyLoss()
    run_model = _common.maybe_compile(torch, model, args.compile)

    if args.data is not None:
        batches = real_data_iter(torch, torchvision, args, dev)
        data_desc = "imagefolder %s (%d workers)" % (args.data, args.workers)
    else:
        batches = synthetic_data_iter(torch, args, dev)
        data_desc = "synthetic"

    note(PROG, "model=%s params=%d (%s)%s device=%s batch=%d image=%d amp=%s channels_last=%s lr=%g "
         "data=%s steps=%s duration=%s seed=%d compile=%s torch=%s torchvision=%s" % (
             args.model, n_params, _common.human_count(n_params), " aux=yes" if aux else "",
             _common.device_description(torch, dev), args.batch_size, args.image_size, prec.name,
             "yes" if args.channels_last else "no", lr, data_desc, args.steps or "none",
             "%gs" % args.duration if args.duration else "none", args.seed, "yes" if args.compile else "no",
             torch.__version__, torchvision.__version__))

    def step(_i):
        images, labels = next(batches)
        if args.channels_last:  # a no-op for the synthetic batch, already channels-last
            images = images.contiguous(memory_format=torch.channels_last)
        opt.zero_grad(set_to_none=True)
        with prec.autocast():
            out = run_model(images)
            if isinstance(out, tuple):  # inception_v3 in training mode: (logits, aux_logits)
                loss = crit(out[0], labels)
                if out[1] is not None:
                    loss = loss + 0.4 * crit(out[1], labels)
            else:
                loss = crit(out, labels)
        prec.backward_step(loss, opt)
        return loss.detach()

    _common.train_loop(torch, PROG, dev, args, step, args.batch_size, "images")


if __name__ == "__main__":
    sys.exit(_common.run_main(PROG, lambda: main(sys.argv[1:]), lambda: _torch))
