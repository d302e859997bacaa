# SPDX-License-Identifier: Apache-2.0
# Mode mps against NVIDIA's real nvidia-cuda-mps-control (Debian's nvidia-cuda-mps; the control
# daemon starts and answers without a GPU), with the fake libnvidia-ml.so.1 as the device:
#  - the daemon starts with private 0700 pipe and log directories given as absolute paths (the
#    run's --results is relative), each job gets them absolute too, and a job that changes its
#    working directory still finds the daemon's socket; per-client thread percentages; `quit` at the end
#    leaves no daemon;
#  - migbench killed with SIGKILL leaves its daemon running: `run --resume` tells it to quit and
#    the resumed cell starts a new one in the same (stale) pipe directory;
#  - the daemon itself killed too: the stale pipe directory alone does not stop the resumed cell.
. "$MB_SOURCE_DIR/tests/nvidia/lib.sh"
[ -x "$NV_MPS" ] || nv_unavailable "no nvidia-cuda-mps-control under $NV_ROOT"
FX="$MB_BINARY_DIR/fixtures"
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -x "$FX/fx_steady" ] && [ -r "$FAKE" ] || { echo "FAIL: fixtures or fake NVML not built" >&2; exit 1; }
mkdir -p "$TMP/bin"
ln -s "$NV_MPS" "$TMP/bin/nvidia-cuda-mps-control"
export PATH="$TMP/bin:$PATH" MIGBENCH_NVML_LIBRARY="$FAKE"
export MIGBENCH_FAKE_NVML_SPEC="H100-80GB,state=$TMP/gpu.json"

job_pids() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: e = json.loads(l)
    except ValueError: continue
    if e.get("event") == "job_started": print(int(e["pid"]))' "$1" 2>/dev/null || true
}
# The daemons this test started, by the pid in their control.log: stopped whatever happens.
daemon_pids() {
    cat "$TMP"/w/*/mps/*/log/control.log 2>/dev/null |
        sed -n 's/.*Control \{1,\}\([0-9]\{1,\}\)\].*/\1/p' | sort -u
}
cleanup() {
    for r in "$TMP"/w/*/journal.jsonl; do
        for p in $(job_pids "$r"); do kill -KILL -- "-$p" 2>/dev/null || true; done
    done
    for p in $(daemon_pids); do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
# asks DIR's daemon: prints its answer, status 1 when there is none.
ask() { echo "$2" | CUDA_MPS_PIPE_DIRECTORY="$1" CUDA_MPS_LOG_DIRECTORY="$1" nvidia-cuda-mps-control; }

# Each job first looks for the daemon's control socket from / (as a Hydra job that changes
# directory would run; asking the daemon itself from three jobs at once is not reliable).
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: realmps
device: nvml:0
workloads:
  a:
    command: ["/bin/sh", "-c", "cd / && test -S \"\$CUDA_MPS_PIPE_DIRECTORY/control\"; echo \"status \$?\" >\"$TMP/asked.\$\$\"; exec \"\$0\" \"\$@\"", "$FX/fx_steady", --rate, "20", --release-dir, "$TMP/release"]
runs:
  - {name: m3, mode: mps, jobs: [a, a, a], match_layout: [4g.40gb, 2g.20gb, 1g.10gb]}
measure: {warmup: 2 steps, duration: completion, sample_interval: 50ms, grace: 1s, progress_timeout: 60s, repetitions: 1}
YAML
mkdir -p "$TMP/release"
# release RESULTS N: in the background, lets every job go once N jobs have started (the jobs run
# until released: the cell lasts exactly as long as the test needs).
release() {
    (wait_line "$TMP/w/$1/journal.jsonl" '"job_started"' "$2" &&
        for p in $(job_pids "$TMP/w/$1/journal.jsonl"); do : >"$TMP/release/$p"; done) &
}

# --- a whole run, --results relative.
mkdir -p "$TMP/w"
release r1 3
run 0 env -C "$TMP/w" "$MIGBENCH" run "$TMP/exp.yaml" --results r1
P="$TMP/w/r1/mps/m3-0"
[ -d "$P/pipe" ] || fail "no pipe directory $P/pipe"
[ "$(stat -c %a "$P/pipe")" = 700 ] && [ "$(stat -c %a "$P/log")" = 700 ] || fail "MPS directories not 0700"
grep -q 'Starting control daemon\|NEW UI\|Accepting connection' "$P/log/control.log" ||
    fail "the real daemon did not run (control.log: $(head -3 "$P/log/control.log" 2>/dev/null))"
python3 - "$TMP/w/r1" "$P" <<'PY' || fail "cell.json"
import json, sys
res, p = sys.argv[1], sys.argv[2]
c = json.load(open(f"{res}/m3/0/cell.json"))
bad = []
if c["status"] != "ok":
    bad.append(f"status {c['status']} {c.get('failure')}")
for j in c["jobs"]:
    env = j["env"]
    if env.get("CUDA_MPS_PIPE_DIRECTORY") != f"{p}/pipe" or env.get("CUDA_MPS_LOG_DIRECTORY") != f"{p}/log":
        bad.append(f"job {j['name']}: {env.get('CUDA_MPS_PIPE_DIRECTORY')} {env.get('CUDA_MPS_LOG_DIRECTORY')}")
pct = [j["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] for j in c["jobs"]]
if pct != ["57", "29", "14"]:
    bad.append(f"percentages {pct}")
if c["mps"]["daemon"] == "none (emulated GPU)" or c["mps"]["pipe_dir"] != f"{p}/pipe":
    bad.append(f"mps {c['mps']}")
ev = [json.loads(l) for l in open(f"{res}/journal.jsonl")]
st = [e for e in ev if e["event"] == "mps_stopped"]
if len(st) != 1 or not st[0]["ok"]:
    bad.append(f"mps_stopped {st}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
n=$(cat "$TMP"/asked.* | grep -c '^status 0$' || true)
[ "$n" = 3 ] || fail "jobs that changed directory did not all reach the daemon: $(cat "$TMP"/asked.*)"
rm -f "$TMP"/asked.*
run 1 ask "$P/pipe" get_server_list
grep -q 'Cannot find MPS control daemon' "$TMP/out" "$TMP/err" || fail "a daemon is left after quit"

# --- migbench killed with SIGKILL mid-cell: its daemon stays; --resume quits it and reruns.
kill_mid_cell() { # kill_mid_cell RESULTS
    env -C "$TMP/w" "$MIGBENCH" run "$TMP/exp.yaml" --results "$1" >"$TMP/o-$1" 2>"$TMP/e-$1" &
    local pid=$!
    wait_line "$TMP/w/$1/journal.jsonl" '"job_started"' 3
    kill -KILL $pid
    wait $pid 2>/dev/null || true
    for p in $(job_pids "$TMP/w/$1/journal.jsonl"); do kill -KILL -- "-$p" 2>/dev/null || true; done
}
# Messages of the runs killed below, for a failure's log.
trap '[ "$FAILS" = 0 ] || cat "$TMP"/e-r* >&2 2>/dev/null; cleanup' EXIT
kill_mid_cell r2
P2="$TMP/w/r2/mps/m3-0"
run 0 ask "$P2/pipe" get_server_list
release r2 6
run 0 env -C "$TMP/w" "$MIGBENCH" run "$TMP/exp.yaml" --results r2 --resume
python3 - "$TMP/w/r2" <<'PY' || fail "resume journal"
import json, sys
ev = [json.loads(l) for l in open(f"{sys.argv[1]}/journal.jsonl")]
cl = [e for e in ev if e["event"] == "cleanup" and e.get("what") == "mps"]
ok = json.load(open(f"{sys.argv[1]}/m3/0/cell.json"))["status"] == "ok"
if len(cl) != 1 or not cl[0]["ok"] or not ok:
    print(f"cleanup {cl}, cell ok {ok}", file=sys.stderr)
    sys.exit(1)
PY
run 1 ask "$P2/pipe" get_server_list

# --- migbench and its daemon both killed: the stale pipe directory is reused.
kill_mid_cell r3
P3="$TMP/w/r3/mps/m3-0"
for p in $(sed -n 's/.*Control \{1,\}\([0-9]\{1,\}\)\].*/\1/p' "$P3/log/control.log" | sort -u); do
    kill -KILL "$p" 2>/dev/null || true
done
run 1 ask "$P3/pipe" get_server_list
[ -e "$P3/pipe/control" ] || fail "expected the dead daemon's pipe in $P3/pipe"
release r3 6
run 0 env -C "$TMP/w" "$MIGBENCH" run "$TMP/exp.yaml" --results r3 --resume
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); sys.exit(c["status"] != "ok")' \
    "$TMP/w/r3/m3/0/cell.json" || fail "the resumed cell did not run"
run 1 ask "$P3/pipe" get_server_list
finish
