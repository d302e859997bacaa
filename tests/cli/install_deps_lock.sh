# SPDX-License-Identifier: Apache-2.0
# scripts/install-deps.sh waits for a held apt/dpkg lock (unattended-upgrades on a fresh
# machine) instead of failing at once: it says who holds it, goes on when it is released, and
# gives up with a message after its bound. The lock is a scratch file held with flock(1), named
# to the script through MIGBENCH_APT_LOCKS; apt-get, dpkg-query and sudo are stand-ins on PATH
# (apt-get records its arguments and whether the lock was free when it was called).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
command -v flock >/dev/null || { echo "SKIP: no flock"; exit 0; }
LK=$TMP/lock-frontend
: >"$LK"
mkdir -p "$TMP/bin"
cat >"$TMP/bin/dpkg-query" <<'SH'
#!/bin/sh
exit 1
SH
cat >"$TMP/bin/apt-get" <<SH
#!/bin/sh
if flock -n "$LK" true; then s=free; else s=HELD; fi
echo "\$s \$*" >>"$TMP/apt.log"
SH
cat >"$TMP/bin/sudo" <<'SH'
#!/bin/sh
exec "$@"
SH
chmod +x "$TMP/bin/"*
export PATH="$TMP/bin:$PATH" MIGBENCH_APT_LOCKS="$LK" MIGBENCH_APT_LOCK_POLL=1
mkfifo "$TMP/release"

# hold: takes the lock in the background until a line is written to $TMP/release.
hold() {
    : >"$TMP/held"
    flock "$LK" sh -c 'echo held >"$1"; read -r _ <"$2"' sh "$TMP/held" "$TMP/release" &
    holder=$!
    wait_line "$TMP/held" '^held$'
}

# 1. Held, then released while the script waits: it says so, waits, then runs apt-get.
hold
: >"$TMP/deps.err"
MIGBENCH_APT_LOCK_TIMEOUT=600 "$MB_SOURCE_DIR/scripts/install-deps.sh" 2>"$TMP/deps.err" &
deps=$!
wait_line "$TMP/deps.err" 'apt is busy: .*lock-frontend is held by process [0-9]+ \(flock\)'
[ -e "$TMP/apt.log" ] && fail "apt-get ran while the lock was held"
echo go >"$TMP/release"
wait "$holder" || true
rc=0
wait "$deps" || rc=$?
[ "$rc" = 0 ] || { fail "install-deps exited $rc after the lock was released"; cat "$TMP/deps.err" >&2; }
grep -q 'the apt lock is free after [0-9]* s; going on' "$TMP/deps.err" || fail "no 'free' message"
grep -q '^free .*DPkg::Lock::Timeout=[0-9]* update' "$TMP/apt.log" || fail "apt-get update not run"
grep -q '^free .*install -y' "$TMP/apt.log" || fail "apt-get install not run"
grep -q '^HELD' "$TMP/apt.log" && fail "apt-get ran while the lock was held"

# 2. Held for good: it gives up after its bound, with a message, and never calls apt-get.
rm -f "$TMP/apt.log"
hold
run 1 env MIGBENCH_APT_LOCK_TIMEOUT=1 "$MB_SOURCE_DIR/scripts/install-deps.sh"
expect_err 'apt is busy'
expect_err 'gave up after [0-9]+ s: .*lock-frontend is still held by process [0-9]+'
[ -e "$TMP/apt.log" ] && fail "apt-get ran although the lock stayed held"
echo go >"$TMP/release"
wait "$holder" || true

# 3. Free: no wait, no message about the lock.
run 0 "$MB_SOURCE_DIR/scripts/install-deps.sh"
grep -q 'apt is busy' "$TMP/err" && fail "waited for a free lock"
grep -q '^free .*install' "$TMP/apt.log" || fail "apt-get install not run with a free lock"
finish
