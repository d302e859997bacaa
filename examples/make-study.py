#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes examples/study-{a100,h100,h200}.yaml: the study's experiment matrix per GPU model.

The files share their jobs (so results compare across GPUs) and differ in the GPU model whose MIG
profile names and memory sizes they use (a run is left out where a job does not fit). Edit this generator, not the YAML files; run
    python3 examples/make-study.py            # rewrites both files next to this script
    python3 examples/make-study.py --check    # exit 1 if a file differs from what it would write
    python3 examples/make-study.py --emulate h100 --state /tmp/gpu.json [--fixture PATH]
        # prints the same study for an emulated GPU (docs/devices.md "The GPU model"): every
        # workload is the modelled workload (build/fixtures/fx_model) with its preset and batch
tests/cli/examples.sh runs the --check form. Standard library only.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# The six workloads, 14M to 1.5B parameters. memory_mib: ESTIMATED peak GPU memory per job
# (parameters, gradients, optimizer state, activations at these batch sizes, CUDA context), used
# by --dry-run to refuse a layout that cannot fit. Measure and correct them on your GPU: the
# workloads print "peak GPU memory reserved by torch" when they stop.
VISION = ["--amp", "bf16", "--channels-last", "--batch-size", "64"]
WORKLOADS = [
    # name, command tail, unit, gpu args, memory_mib, comment
    ("densenet169", ["vision.py", "--model", "densenet169"], "images", ["--device", "cuda"] + VISION, 7000,
     "14.1M parameters, 224 px"),
    ("resnet50", ["vision.py", "--model", "resnet50"], "images", ["--device", "cuda"] + VISION, 5000,
     "25.6M parameters, 224 px"),
    ("inception-v3", ["vision.py", "--model", "inception_v3"], "images", ["--device", "cuda"] + VISION, 7000,
     "27.2M parameters with the aux classifier, 299 px"),
    ("gpt2-small", ["gpt.py", "--size", "small"], "tokens",
     ["--device", "cuda", "--amp", "bf16", "--batch-size", "4", "--seq-len", "1024"], 6500,
     "124M parameters, 4 x 1024 tokens a step"),
    ("gpt2-medium", ["gpt.py", "--size", "medium"], "tokens",
     ["--device", "cuda", "--amp", "bf16", "--batch-size", "1", "--seq-len", "1024"], 8500,
     "355M parameters, 1 x 1024 tokens a step"),
    ("gpt2-xl", ["gpt.py", "--size", "xl"], "tokens",
     ["--device", "cuda", "--amp", "bf16", "--batch-size", "1", "--seq-len", "1024"], 31000,
     "1.56B parameters, 1 x 1024 tokens a step; AdamW state alone is ~25 GB"),
    # Fine-tuning: the fine-tuning learning-rate schedule and dropout, run until migbench stops it
    # (--steps 0). Without a checkpoint the weights are random (the job says so): the compute per
    # token is the same as fine-tuning a pretrained model, which is what the comparison measures.
    ("gpt2-xl-ft", ["gpt.py", "--size", "xl", "--finetune"], "tokens",
     ["--device", "cuda", "--amp", "bf16", "--batch-size", "1", "--seq-len", "1024", "--steps", "0"], 32000,
     "GPT-2 XL fine-tuning (lr 3e-5, warmup 10, cosine, dropout 0.1)"),
    ("gpt2-medium-ft", ["gpt.py", "--size", "medium", "--finetune"], "tokens",
     ["--device", "cuda", "--amp", "bf16", "--batch-size", "1", "--seq-len", "1024", "--steps", "0"], 9000,
     "GPT-2 medium fine-tuning"),
]
STUDY = ["densenet169", "resnet50", "inception-v3", "gpt2-small", "gpt2-medium", "gpt2-xl"]
# Partition sizes as (compute slices, memory slices), named per model from the catalog: on an
# 80 GB A100/H100 these are 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb.
G1, G1M2, G2, G3, G4, G7 = (1, 1), (1, 2), (2, 2), (3, 4), (4, 4), (7, 8)
SIZES = [G1, G1M2, G2, G3, G4, G7]
HOMOGENEOUS = [("7x1g", [G1] * 7), ("3x2g", [G2] * 3), ("2x3g", [G3] * 2)]
# Mixed small/medium/large layouts, each job sized to its partition (largest job, largest slice).
MIXES = [
    ("mix-4-2-1-lm", [G4, G2, G1], ["gpt2-xl", "gpt2-medium", "resnet50"]),
    ("mix-3-2-1-1-lm", [G3, G2, G1, G1], ["gpt2-xl", "gpt2-small", "resnet50", "densenet169"]),
    ("mix-4-2-1-vision", [G4, G2, G1], ["inception-v3", "resnet50", "densenet169"]),
    ("mix-3-2-1-1-vision", [G3, G2, G1, G1],
     ["inception-v3", "resnet50", "densenet169", "densenet169"]),
]
GPUS = {
    "a100": ("A100-SXM4-80GB", "NVIDIA A100 80GB (SXM4)"),
    "h100": ("H100-SXM5-80GB", "NVIDIA H100 80GB (SXM5)"),
    "h200": ("H200-141GB", "NVIDIA H200 141GB"),
}
MEASURE = dict(warmup="30s", duration="120s", repetitions=3, sample_interval="100ms", idle="5s",
               cooldown="30s", grace="30s", progress_timeout="300s")


def catalog():
    with open(os.path.join(HERE, "..", "data", "mig-catalog.json")) as f:
        return json.load(f)


def q(s):
    """A YAML scalar: plain when safe, double-quoted otherwise."""
    s = str(s)
    safe = all(c.isalnum() or c in "-_./{}" for c in s)
    if s and safe and s[0] != "{" and (s[0] != "-" or s[:2] == "--") and not s.lstrip("-").isdigit():
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def flow(items):
    return "[" + ", ".join(q(i) for i in items) + "]"


# The emulator's workload presets (data/gpumodel.json) and the study's batch, in their units.
PRESET_BATCH = {"densenet169": 64, "resnet50": 64, "inception-v3": 64, "gpt2-small": 4096,
                "gpt2-medium": 1024, "gpt2-xl": 1024, "gpt2-xl-ft": 1024, "gpt2-medium-ft": 1024}


def generate(key, emu=None):
    model_name, title = GPUS[key]
    model = catalog()[model_name]
    mem = {p["name"]: p["memory_mib"] for p in model["profiles"]}
    names = {}
    for p in model["profiles"]:
        if not p["name"].endswith("+me"):
            names[(p["compute_slices"], p["memory_slices"])] = p["name"]

    def pn(size):
        return names[size]

    def pl(sizes):
        return [names[s] for s in sizes]
    wl = {w[0]: w for w in WORKLOADS}
    out = []
    w = out.append
    if emu:
        emu["spec"] = "emu:%s:state=%s" % (model_name, emu["state"])
        w("# Generated by examples/make-study.py --emulate %s: the study on an EMULATED GPU, every job" % key)
        w("# the modelled workload (fx_model) with the preset standing for it; every figure is modelled.")
    else:
        w("# Generated by examples/make-study.py: edit that file, then run it.")
    w("# The EuroMLSys'24 study's experiment matrix on an %s (catalog model %s)." % (title, model_name))
    w("#")
    w("# Six workloads, 14M to 1.56B parameters; every workload alone on every MIG partition size it")
    w("# (%s)" % ", ".join(pl(SIZES)))
    w("# fits and on the full GPU; homogeneous layouts (7x1g, 3x2g, 2x3g); mixed small/medium/large")
    w("# layouts with jobs sized to their partitions, each with matched MPS and time-slicing runs and")
    w("# the same jobs one after another; and the fine-tuning comparison. Every run is GPU-only.")
    w("#")
    w("# Check without a GPU:  migbench run --dry-run --device emu:%s examples/study-%s.yaml" % (model_name, key))
    w("# Run a part:           migbench run --only solo-resnet50-full,solo-resnet50-%s examples/study-%s.yaml"
      % (pn(G1), key))
    w("# Run it all (root, idle GPUs; docs/study.md):")
    w("#                       migbench run --device nvml:all examples/study-%s.yaml" % key)
    w("# memory_mib values are ESTIMATES (see docs/workloads.md); the jobs print their measured peak.")
    w("version: 1")
    w("name: study-%s%s" % (key, "-emu" if emu else ""))
    w("device: %s" % (q(emu["spec"]) if emu else "auto"))
    w("python: auto")
    w("slurm:")
    w("  gpu: %s   # the nodes' GPU: migbench slurm submit numbers the cells as on it" % model_name)
    w("# The runs need MIG off (full GPU, MPS, time-slicing) and MIG on (partitions): migbench runs")
    w("# them in two phases, switching the MIG mode of each idle GPU in between (the driver resets")
    w("# it), and restores the original mode at the end or on --resume. false: one mode per run of")
    w("# migbench, and it prints the commands for the two phases.")
    w("manage_mig_mode: true")
    w("")
    w("workloads:")
    for name, cmd, unit, gpu_args, memory, comment in WORKLOADS:
        w("  %s:  # %s" % (name, comment))
        if emu:
            w("    command: %s" % flow([emu["fixture"], "--device", emu["spec"], "--workload", name, "--duration", "100000"]))
        else:
            w("    command: %s" % flow(["{python}", "{workloads}/" + cmd[0]] + cmd[1:]))
        w("    unit: %s" % unit)
        w("    gpu_args: %s" % flow(["--batch", PRESET_BATCH[name]] if emu else gpu_args))
        w("    memory_mib: %d" % memory)
    w("")
    w("runs:")
    n_runs = 0
    cells = 0  # job-windows per repetition, for the time estimate

    def run(text, n_windows):
        nonlocal n_runs, cells
        w("  - " + text)
        n_runs += 1
        cells += n_windows

    w("  # 1. Every workload alone: on the full GPU (MIG off), then on each partition size it fits.")
    for name in STUDY:
        run("{name: solo-%s-full, mode: exclusive, only: [gpu], jobs: [%s]}" % (name, name), 1)
        for size in pl(SIZES):
            if wl[name][4] > mem[size]:
                w("  # solo-%s-%s left out: %d MiB estimated, %s has %d MiB" % (name, size, wl[name][4], size,
                                                                              mem[size]))
                continue
            run("{name: solo-%s-%s, mode: mig, only: [gpu], layout: [%s], jobs: [%s]}" % (name, size, size, name), 1)
    w("")
    w("  # 2. Homogeneous layouts: copies of one workload on equal partitions.")
    for lname, sizes in HOMOGENEOUS:
        layout = pl(sizes)
        for name in STUDY:
            if wl[name][4] > mem[layout[0]]:
                continue
            run("{name: %s-%s, mode: mig, only: [gpu], layout: %s, jobs: %s}"
                % (lname, name, flow(layout), flow([name] * len(layout))), 1)
    w("")
    w("  # 3. Mixed layouts, and the same jobs under MPS (thread shares matched to the MIG slices),")
    w("  #    time-slicing, and one after another on the whole GPU.")
    for mname, sizes, jobs in MIXES:
        layout = pl(sizes)
        for size, job in zip(layout, jobs):
            assert wl[job][4] <= mem[size], (mname, job, size)
        base = mname[len("mix-"):]
        run("{name: %s, mode: mig, only: [gpu], layout: %s, jobs: %s}" % (mname, flow(layout), flow(jobs)), 1)
        run("{name: mps-%s, mode: mps, only: [gpu], match_layout: %s, jobs: %s}" % (base, flow(layout), flow(jobs)), 1)
        run("{name: ts-%s, mode: timeslice, only: [gpu], jobs: %s}" % (base, flow(jobs)), 1)
        run("{name: seq-%s, mode: exclusive, only: [gpu], jobs: %s}" % (base, flow(jobs)), len(jobs))
    w("")
    w("  # 4. Fine-tuning: GPT-2 XL alone on the full GPU and on 3g/4g, two at once (MIG, MPS,")
    w("  #    time-slicing, one after another), and seven GPT-2 medium fine-tunes on 7x1g vs the")
    w("  #    whole GPU; pretraining on the same partitions is in sections 1 and 2.")
    g3, g4, g1 = pn(G3), pn(G4), pn(G1)
    xl_ft, med_ft = wl["gpt2-xl-ft"][4], wl["gpt2-medium-ft"][4]
    assert xl_ft <= mem[g3] and med_ft <= mem[g1]
    run("{name: ft-xl-full, mode: exclusive, only: [gpu], jobs: [gpt2-xl-ft]}", 1)
    run("{name: ft-xl-%s, mode: mig, only: [gpu], layout: [%s], jobs: [gpt2-xl-ft]}" % (g3, g3), 1)
    run("{name: ft-xl-%s, mode: mig, only: [gpu], layout: [%s], jobs: [gpt2-xl-ft]}" % (g4, g4), 1)
    run("{name: ft-xl-2x3g, mode: mig, only: [gpu], layout: [%s, %s], jobs: [gpt2-xl-ft, gpt2-xl-ft]}" % (g3, g3), 1)
    run("{name: ft-xl-2x-mps, mode: mps, only: [gpu], match_layout: [%s, %s], "
        "jobs: [gpt2-xl-ft, gpt2-xl-ft]}" % (g3, g3), 1)
    run("{name: ft-xl-2x-ts, mode: timeslice, only: [gpu], jobs: [gpt2-xl-ft, gpt2-xl-ft]}", 1)
    run("{name: ft-xl-2x-seq, mode: exclusive, only: [gpu], jobs: [gpt2-xl-ft, gpt2-xl-ft]}", 2)
    run("{name: ft-medium-7x1g, mode: mig, only: [gpu], layout: %s, jobs: %s}"
        % (flow([g1] * 7), flow(["gpt2-medium-ft"] * 7)), 1)
    run("{name: ft-medium-7x-ts, mode: timeslice, only: [gpu], jobs: %s}" % flow(["gpt2-medium-ft"] * 7), 1)
    run("{name: ft-medium-full, mode: exclusive, only: [gpu], jobs: [gpt2-medium-ft]}", 1)
    w("")
    m = MEASURE
    secs = lambda s: int(s.rstrip("s"))  # noqa: E731
    per_window = secs(m["warmup"]) + secs(m["duration"]) + secs(m["idle"]) + secs(m["cooldown"])
    hours = cells * m["repetitions"] * per_window / 3600.0
    w("# %d runs; at least %.0f hours of measuring at %d repetitions (job start-up, MIG changes and" % (
        n_runs, hours, m["repetitions"]))
    w("# cooling add more). Pick runs with --only, or shorten measure with --set measure.duration=60s.")
    w("measure:")
    for k in ("warmup", "duration", "repetitions", "sample_interval", "idle", "cooldown", "grace",
              "progress_timeout"):
        w("  %s: %s" % (k, m[k]))
    assert n_runs <= 128, n_runs
    return "\n".join(out) + "\n"


def emulate(argv):
    def opt(name, default=None):
        return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else default
    key, state = opt("--emulate"), opt("--state")
    if key not in GPUS or not state:
        sys.stderr.write("make-study.py: --emulate %s --state PATH [--fixture PATH]\n" % "|".join(GPUS))
        return 2
    sys.stdout.write(generate(key, {"state": state, "fixture": opt("--fixture", "build/fixtures/fx_model")}))
    return 0


def main(argv):
    if "--emulate" in argv:
        return emulate(argv)
    check = "--check" in argv
    bad = 0
    for key in GPUS:
        path = os.path.join(HERE, "study-%s.yaml" % key)
        text = generate(key)
        if check:
            try:
                with open(path) as f:
                    same = f.read() == text
            except FileNotFoundError:
                same = False
            if not same:
                sys.stderr.write("make-study.py: %s is not what make-study.py writes; run it\n" % path)
                bad = 1
        else:
            with open(path, "w") as f:
                f.write(text)
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
