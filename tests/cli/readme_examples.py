# SPDX-License-Identifier: Apache-2.0
"""Runs every `$ migbench ...` line of README.md and docs/*.md as written (issue 11).

    readme_examples.py SOURCE_DIR BINARY_DIR MIGBENCH WORKDIR

Each line (with its continuation lines) runs through bash in WORKDIR, a stand-in for the
repository root after the quickstart: examples/, workloads/, tests/ and data/ link to the source
tree, build/ holds the migbench binary and the fixtures, and `migbench` is on PATH. Lines run in
document order per file, so a file may build on its own earlier lines (a state file, a results
directory). A line passes when it exits with the status the document shows: the number after a
following `$ echo $?`, else 1 when the output shown says "does not fit", else 0.

A line that cannot run here is marked in its document by an HTML comment outside the code block,
naming the start of the command: <!-- needs-gpu: migbench mig apply layout.yaml --> (needs a real
NVIDIA GPU) or <!-- not-run: migbench run examples/quickstart.yaml (reason) -->. Those are
skipped by name and listed. The test fails when a marker names no line, and when it ran no line.
"""
import glob
import os
import re
import subprocess
import sys

src, bindir, migbench, work = sys.argv[1:5]
docs = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))

os.makedirs(os.path.join(work, "build"), exist_ok=True)
os.makedirs(os.path.join(work, "bin"), exist_ok=True)
for d in ("examples", "workloads", "tests", "data", "scripts"):
    os.symlink(os.path.join(src, d), os.path.join(work, d))
os.symlink(migbench, os.path.join(work, "build", "migbench"))
os.symlink(os.path.join(bindir, "fixtures"), os.path.join(work, "build", "fixtures"))
os.symlink(migbench, os.path.join(work, "bin", "migbench"))
env = dict(os.environ)
env["PATH"] = os.path.join(work, "bin") + os.pathsep + env.get("PATH", "")
env["MIGBENCH_STATE_DIR"] = os.path.join(work, "state")

marker_re = re.compile(r"<!--\s*(needs-gpu|not-run):\s*(.*?)\s*-->")
ran = failed = 0
skipped = []
for doc in docs:
    lines = open(doc, encoding="utf-8").read().split("\n")
    markers = [(m.group(1), m.group(2)) for l in lines for m in marker_re.finditer(l)]
    used = set()
    cwd = os.path.join(work, "run-" + os.path.basename(doc)[:-3])
    os.makedirs(cwd, exist_ok=True)
    for d in ("examples", "workloads", "tests", "data", "scripts", "build"):
        if not os.path.exists(os.path.join(cwd, d)):
            os.symlink(os.path.join(work, d), os.path.join(cwd, d))
    in_code = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if not (in_code and re.match(r"\s*\$ migbench\b", line)):
            i += 1
            continue
        no = i + 1
        cmd = line.split("$ ", 1)[1]
        while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd.rstrip()[:-1] + " " + lines[i].strip()
        i += 1
        # The documented answer: a following `$ echo $?` line; else 1 when the output shown says
        # "does not fit", else 0.
        want = 0
        j = i
        while j < len(lines) and not lines[j].lstrip().startswith(("```", "$ migbench")):
            if lines[j].strip() == "$ echo $?" and j + 1 < len(lines):
                want = int(lines[j + 1].strip())
                break
            if "does not fit" in lines[j]:
                want = 1
            j += 1
        cmd = re.sub(r"\s+#.*$", "", cmd).strip()  # a trailing comment is prose
        where = "%s:%d" % (os.path.relpath(doc, src), no)
        mark = next((m for m in markers if cmd.startswith(m[1].split(" (")[0].strip())), None)
        if mark:
            used.add(mark)
            skipped.append("%s: %s (%s)" % (where, cmd, mark[0]))
            continue
        r = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=600)
        ran += 1
        ok = r.returncode == want
        print("%s %s: $ %s -> exit %d" % ("ok  " if ok else "FAIL", where, cmd, r.returncode))
        if not ok:
            failed += 1
            for l in (r.stdout + r.stderr).decode("utf-8", "replace").splitlines()[:15]:
                print("      " + l)
    for m in markers:
        if m not in used:
            print("FAIL %s: marker '%s: %s' names no command" % (os.path.relpath(doc, src), *m))
            failed += 1
for s in skipped:
    print("skipped %s" % s)
print("%d lines run, %d failed, %d skipped" % (ran, failed, len(skipped)))
sys.exit(1 if failed or ran == 0 else 0)
