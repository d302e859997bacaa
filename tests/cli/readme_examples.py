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
skipped by name and listed. <!-- output-varies: migbench devices (reason) --> runs the line and
checks its exit status only (its output is the machine's own). The test fails when a marker names
no line, and when it ran no line.

Every other line's output, as the document shows it after the command, must match what the line
prints (stdout and stderr together, scratch paths removed): a line "..." in the sample stands for
any number of lines, "..." inside a line for any text (a time, an energy reading, a host name).
`readme_examples.py --update ...` writes the real output over each sample that differs, to be
trimmed by hand with "..." where a field varies.
"""
import glob
import os
import re
import subprocess
import sys

update = len(sys.argv) > 1 and sys.argv[1] == "--update"
if update:
    del sys.argv[1]
src, bindir, migbench, work = sys.argv[1:5]
work = os.path.realpath(work)


def shown_output(lines, i):
    """The output a document shows after the command ending at line i: (first, end, lines)."""
    j = i
    while j < len(lines) and not lines[j].lstrip().startswith(("```", "$ ")):
        j += 1
    while j > i and not lines[j - 1].strip():
        j -= 1  # the blank line before the next command is not output
    return i, j, lines[i:j]


# GPU and MIG UUIDs: an emulated GPU's is derived from its state file's absolute path, which is
# this run's scratch directory, so on both sides every UUID reads GPU-UUID (MIG-UUID); a sample
# that shows one cut short ("GPU-1a771b9e-...") stands for any.
uuid_re = re.compile(r"\b(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
short_uuid_re = re.compile(r"\b(GPU|MIG)-[0-9a-f]{8}-\.\.\.")


def mask(text, cwd):
    """Real output with what varies between machines and runs replaced: the scratch paths and
    the UUIDs."""
    text = text.replace(cwd + "/", "").replace(cwd, ".").replace(work + "/", "").replace(work, ".")
    text = uuid_re.sub(r"\1-UUID", text)
    return [l.rstrip() for l in text.rstrip("\n").split("\n")] if text.strip() else []


def pattern(shown):
    """A shown sample as a regular expression: a line "..." stands for any lines (or none), and
    "..." inside a line for any text; trailing blanks do not count."""
    parts = []
    for l in shown:
        l = short_uuid_re.sub(r"\1-...", uuid_re.sub(r"\1-UUID", l.rstrip()))
        if l.strip() == "...":
            parts.append("(?:[^\\n]*\\n)*?")
        else:
            parts.append(".*".join(re.escape(x) for x in l.split("...")) + "\\n")
    return re.compile("".join(parts))


def matches(shown, real):
    if not shown:
        return True  # the document shows no output: only the exit status is checked
    return pattern(shown).fullmatch("".join(l + "\n" for l in real)) is not None
docs = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))

os.makedirs(os.path.join(work, "build"), exist_ok=True)
os.makedirs(os.path.join(work, "bin"), exist_ok=True)
for d in ("examples", "workloads", "tests", "data", "scripts"):
    os.symlink(os.path.join(src, d), os.path.join(work, d))
os.symlink(migbench, os.path.join(work, "build", "migbench"))
os.symlink(os.path.join(bindir, "fixtures"), os.path.join(work, "build", "fixtures"))
os.symlink(bindir, os.path.join(work, "build-test"))  # the test build, as scripts/test.sh makes
os.symlink(migbench, os.path.join(work, "bin", "migbench"))
env = dict(os.environ)
env["PATH"] = os.path.join(work, "bin") + os.pathsep + env.get("PATH", "")
env["MIGBENCH_STATE_DIR"] = os.path.join(work, "state")
env["LC_ALL"] = "C.UTF-8"
env["MIGBENCH_RUNTIME_DIR"] = os.path.join(work, "runtime")  # no other test's runs in monitor
env.pop("COLUMNS", None)
# A quiet host for `migbench run`'s outside-load check (docs/run.md, "Outside load"): the doc
# outputs must not gain "outside load:" lines because the test machine is busy. Load average 0
# on one CPU, and no ticks pass in the window, so every window is judged quiet.
quiet_proc = os.path.join(work, "quiet-proc")
os.makedirs(quiet_proc, exist_ok=True)
with open(os.path.join(quiet_proc, "stat"), "w") as f:
    f.write("cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\n")
with open(os.path.join(quiet_proc, "loadavg"), "w") as f:
    f.write("0.00 0.00 0.00 1/100 1\n")
env["MIGBENCH_PROC_ROOT"] = quiet_proc
# stdbuf line-buffers through LD_PRELOAD, which puts its library before a sanitizer build's ASan
# runtime; ASan then refuses to start unless told that this order is fine.
env["ASAN_OPTIONS"] = ":".join(x for x in (env.get("ASAN_OPTIONS"), "verify_asan_link_order=0") if x)

marker_re = re.compile(r"<!--\s*(needs-gpu|not-run|output-varies):\s*(.*?)\s*-->")
ran = failed = 0
skipped = []
updates = {}
for doc in docs:
    lines = open(doc, encoding="utf-8").read().split("\n")
    markers = [(m.group(1), m.group(2)) for l in lines for m in marker_re.finditer(l)]
    used = set()
    cwd = os.path.join(work, "run-" + os.path.basename(doc)[:-3])
    os.makedirs(cwd, exist_ok=True)
    for d in ("examples", "workloads", "tests", "data", "scripts", "build", "build-test"):
        if not os.path.exists(os.path.join(cwd, d)):
            os.symlink(os.path.join(work, d), os.path.join(cwd, d))
    in_code = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if not (in_code and re.match(r"\s*\$ (migbench\b|[A-Z][A-Z0-9_]*=)", line)):
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
        if mark and mark[0] == "output-varies":
            used.add(mark)  # runs; its exit status counts, its output is this machine's
        elif mark:
            used.add(mark)
            skipped.append("%s: %s (%s)" % (where, cmd, mark[0]))
            continue
        # Both streams in one pipe, line-buffered as on a terminal, so they interleave as a
        # terminal shows them.
        r = subprocess.run(["stdbuf", "-oL", "-eL", "bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=600)
        ran += 1
        real = mask(r.stdout.decode("utf-8", "replace"), os.path.realpath(cwd))
        first, end, shown = shown_output(lines, i)
        same = bool(mark) or matches(shown, real)
        ok = r.returncode == want and same
        print("%s %s: $ %s -> exit %d%s" % ("ok  " if ok else "FAIL", where, cmd, r.returncode,
                                            "" if same else ", output differs from the sample"))
        if not same and update:
            updates.setdefault(doc, []).append((first, end, real))
        elif not ok:
            failed += 1
            for l in real[:40]:
                print("      | " + l)
    if doc in updates:
        # Newest first, so earlier line numbers stay valid; the author trims with "..." after.
        for first, end, real in reversed(updates[doc]):
            lines[first:end] = real
        open(doc, "w", encoding="utf-8").write("\n".join(lines))
        print("updated %s: %d samples" % (os.path.relpath(doc, src), len(updates[doc])))
    for m in markers:
        if m not in used:
            print("FAIL %s: marker '%s: %s' names no command" % (os.path.relpath(doc, src), *m))
            failed += 1
for s in skipped:
    print("skipped %s" % s)
print("%d lines run, %d failed, %d skipped" % (ran, failed, len(skipped)))
sys.exit(1 if failed or ran == 0 else 0)
