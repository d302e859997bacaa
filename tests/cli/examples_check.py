# SPDX-License-Identifier: Apache-2.0
"""Checks that every job in examples/*.yaml is a valid command line of its workload script.

Usage: PYTHON examples_check.py SOURCE_DIR. For each workload whose command is
["{python}", "{workloads}/SCRIPT", ...], runs SCRIPT with the command's arguments plus host_args and
plus gpu_args and --print-params: the script's own argument parser must accept them (exit 0), and
the printed parameter count must be a number. Needs PyYAML (python3-yaml) and torch.
"""

import os
import re
import subprocess
import sys

import yaml

SRC = os.path.abspath(sys.argv[1])
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


seen = {}
for name in sorted(os.listdir(os.path.join(SRC, "examples"))):
    if not name.endswith(".yaml"):
        continue
    path = os.path.join(SRC, "examples", name)
    with open(path) as f:
        doc = yaml.safe_load(f)
    for wname, w in doc["workloads"].items():
        cmd = [str(x) for x in w["command"]]
        if cmd[0] != "{python}" or not cmd[1].startswith("{workloads}/"):
            fail("%s: %s: command does not start with {python} {workloads}/..." % (name, wname))
            continue
        script = os.path.join(SRC, "workloads", cmd[1][len("{workloads}/"):])
        if not os.path.isfile(script):
            fail("%s: %s: no such workload script %s" % (name, wname, script))
            continue
        if "host_args" not in w and "gpu_args" not in w:
            fail("%s: %s: neither host_args nor gpu_args" % (name, wname))
        for kind in ("host_args", "gpu_args"):
            if kind not in w:
                continue
            argv = [sys.executable, script] + cmd[2:] + [str(x) for x in w[kind]] + ["--print-params"]
            key = tuple(argv)
            if key not in seen:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
                seen[key] = (p.returncode, p.stdout, p.stderr)
            rc, out, err = seen[key]
            what = "%s: workloads.%s %s" % (name, wname, kind)
            if rc != 0 or not re.search(r": \d+ parameters", out):
                fail("%s: exit %d\n  %s" % (what, rc, (err or out).strip().replace("\n", "\n  ")))
            else:
                print("ok: %s -> %s" % (what, out.strip().split(";")[0]))
sys.exit(1 if fails else 0)
