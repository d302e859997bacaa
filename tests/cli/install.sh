# SPDX-License-Identifier: Apache-2.0
# cmake --install into a temporary prefix: the files land in their conventional places, a small C
# program builds against the installed library with pkg-config (shared and static), the man page
# of each command carries the same text as `migbench help CMD`, bash completion works, and
# cpack -G DEB makes a package that holds the same tree.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
for tool in cmake cc pkg-config man readelf cpack dpkg-deb; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is needed" >&2; exit 1; }
done
P="$TMP/prefix"
run 0 cmake --install "$MB_BINARY_DIR" --prefix "$P"
for f in bin/migbench include/migbench/device.h include/migbench/api.h include/migbench/version.h \
    share/migbench/mig-catalog.json share/migbench/workloads/vision.py \
    share/man/man1/migbench.1 share/man/man1/migbench-run.1 share/man/man1/migbench-monitor.1 \
    share/bash-completion/completions/migbench share/zsh/site-functions/_migbench \
    share/doc/migbench/LICENSE; do
    [ -e "$P/$f" ] || fail "not installed: $f"
done
PC=$(find "$P" -name migbench.pc)
[ -n "$PC" ] || { fail "no migbench.pc"; finish; }
LIBDIR=$(dirname "$(dirname "$PC")")
[ -e "$LIBDIR/libmigbench.a" ] || fail "no static library in $LIBDIR"
# The SOVERSION is the ABI version (MB_ABI_VERSION), not the project's major version.
ABI=$(sed -n 's/^set(MB_ABI_VERSION \([0-9]*\)).*/\1/p' "$MB_SOURCE_DIR/CMakeLists.txt")
readelf -d "$LIBDIR/libmigbench.so.$ABI" | grep -q "Library soname: \[libmigbench.so.$ABI\]" ||
    fail "libmigbench.so.$ABI lacks its versioned SONAME"
[ "$(readlink "$LIBDIR/libmigbench.so")" = "libmigbench.so.$ABI" ] || fail "libmigbench.so -> .so.$ABI"
# The library's internal utilities are not installed as API (docs/api.md).
for h in proc fileio num clock stats gpuqueue live prom report_verbs progress monitor; do
    [ ! -e "$P/include/migbench/$h.h" ] || fail "internal header installed: $h.h"
done
grep -q "#define MB_VERSION_TEXT \"$("$MIGBENCH" --version | cut -d' ' -f2)\"" \
    "$P/include/migbench/version.h" || fail "version.h does not carry the project version"
grep -q 'Apache License' "$P/share/doc/migbench/LICENSE" || fail "LICENSE text"

# A library built with sanitizers (CI's ASan build) needs programs linked with them too.
SAN=$(sed -n 's/^MB_SANITIZE:STRING=//p' "$MB_BINARY_DIR/CMakeCache.txt")
SANFLAGS=()
[ -z "$SAN" ] || SANFLAGS=("-fsanitize=$SAN")

# A program against the installed library, found through pkg-config only.
PKG_CONFIG_PATH=$(dirname "$PC")
export PKG_CONFIG_PATH
run 0 pkg-config --exists migbench
run 0 pkg-config --modversion migbench
expect_out "^$("$MIGBENCH" --version | cut -d' ' -f2)\$"
# A program against the installed shared library through its stable API (migbench/api.h), found
# through pkg-config only: the version, a status, a window on an emulated GPU.
cat >"$TMP/prog.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <migbench/api.h>

int main(void)
{
    struct mb_error err;
    struct mb_wmeter *m = NULL;
    char *json = NULL;
    printf("version %s abi %d headers %s\n", mb_version(), mb_abi_version(), MB_VERSION_TEXT);
    if (mb_wmeter_open("emu:A100-40GB", 0, 0, &m, &err) != MB_OK) {
        fprintf(stderr, "open: %s\n", err.msg);
        return 1;
    }
    int rc = mb_wmeter_info(m, &json, &err);
    if (rc == MB_OK)
        printf("%s\n", json);
    mb_free(json);
    mb_wmeter_close(m);
    printf("%s\n", mb_status_str(MB_EUNSUPPORTED));
    return rc == MB_OK ? 0 : 1;
}
C
# shellcheck disable=SC2046 # pkg-config's output is meant to be split into words
run 0 cc -std=c11 -Wall -Werror ${SANFLAGS[@]+"${SANFLAGS[@]}"} -o "$TMP/prog" "$TMP/prog.c" \
    $(pkg-config --cflags --libs migbench)
LD_LIBRARY_PATH="$LIBDIR" run 0 "$TMP/prog"
expect_out "^version $("$MIGBENCH" --version | cut -d' ' -f2) abi $ABI headers "
expect_out '"backend":"emu","emulated":true'
expect_out '^not supported by this device$'
LD_LIBRARY_PATH="$LIBDIR" run 0 ldd "$TMP/prog"
expect_out "libmigbench\.so\.$ABI => $LIBDIR/libmigbench\.so\.$ABI"
# As docs/install.md says: with an RPATH, no LD_LIBRARY_PATH under a non-system prefix.
# shellcheck disable=SC2046
run 0 cc -std=c11 ${SANFLAGS[@]+"${SANFLAGS[@]}"} -o "$TMP/prog-rpath" "$TMP/prog.c" \
    $(pkg-config --cflags --libs migbench) -Wl,-rpath,"$(pkg-config --variable=libdir migbench)"
run 0 env -u LD_LIBRARY_PATH "$TMP/prog-rpath"
expect_out '"backend":"emu","emulated":true'


# The static library keeps the wider API (device.h, layout.h; no ABI promise).
cat >"$TMP/prog-static.c" <<'C'
#include <stdio.h>
#include <migbench/device.h>
#include <migbench/layout.h>

int main(void)
{
    struct mb_error err;
    struct mb_device *dev = NULL;
    if (mb_device_open("emu:A100-40GB:mig=on", &dev, &err) != MB_OK) {
        fprintf(stderr, "open: %s\n", err.msg);
        return 1;
    }
    struct mb_device_info info;
    int rc = mb_device_info(dev, &info, &err);
    if (rc == MB_OK)
        printf("%s %s emulated=%d\n", info.backend, info.model, info.emulated);
    mb_device_close(dev);
    return rc == MB_OK ? 0 : 1;
}
C
# shellcheck disable=SC2046
run 0 cc -std=c11 ${SANFLAGS[@]+"${SANFLAGS[@]}"} -o "$TMP/prog-static" "$TMP/prog-static.c" \
    $(pkg-config --cflags migbench) \
    "$LIBDIR/libmigbench.a" $(pkg-config --static --libs migbench | sed 's/-lmigbench//')
run 0 "$TMP/prog-static"
expect_out '^emu A100-SXM4-40GB emulated=1$'
# ... and the same program cannot link against the shared library: it exports the stable API only.
# shellcheck disable=SC2046
run 1 cc -std=c11 -o "$TMP/prog-shared" "$TMP/prog-static.c" $(pkg-config --cflags --libs migbench)
expect_err 'undefined reference to .mb_device_open'

# The Python package: installed beside the library, which it finds from its own place (no
# MIGBENCH_LIBRARY). Skipped in a sanitizer build, whose library cannot be loaded into an
# uninstrumented python. (`pip install ./python` is tested by python/tests/test_install.py.)
PYDIR="$P/lib/python3/dist-packages"
for f in migbench/__init__.py migbench/meter.py migbench/_install.py; do
    [ -e "$PYDIR/$f" ] || fail "not installed: lib/python3/dist-packages/$f"
done
if [ -z "$SAN" ]; then
    run 0 env -u MIGBENCH_LIBRARY PYTHONPATH="$PYDIR" /usr/bin/python3 -c "
import migbench
print(migbench.__file__)
print('lib', migbench.library_version())
with migbench.Meter('emu:A100-40GB') as m:
    print(m.info['backend'], m.info['emulated'])"
    expect_out "^$PYDIR/migbench/__init__.py\$"
    expect_out "^lib $("$MIGBENCH" --version | cut -d' ' -f2)\$"
    expect_out '^emu True$'
fi

# The installed binary runs and finds its installed workloads.
run 0 "$P/bin/migbench" layouts --list-gpus
expect_out 'H100'
run 0 env -u MIGBENCH_WORKLOADS "$P/bin/migbench" run "$MB_SOURCE_DIR/examples/quickstart.yaml" \
    --dry-run --device emu:A100-80GB
grep -q " $P/bin/../share/migbench/workloads/vision.py " "$TMP/out" ||
    fail "the installed migbench does not find its installed workloads"

# Man pages: the same text as `migbench help CMD`, line for line, for every command.
for cmd in $("$MIGBENCH" --help | awk '/^commands:/{on=1;next} on&&/^$/{exit} on{print $1}'); do
    MANWIDTH=250 man -M "$P/share/man" "migbench-$cmd" 2>"$TMP/man.err" | col -bx >"$TMP/man.txt" ||
        { fail "man migbench-$cmd"; cat "$TMP/man.err" >&2; continue; }
    "$MIGBENCH" help "$cmd" >"$TMP/help.txt"
    python3 - "$TMP/help.txt" "$TMP/man.txt" "$cmd" <<'PY' || fail "man migbench-$cmd differs from help"
import re, sys
help_lines = [l.strip() for l in open(sys.argv[1]) if l.strip()]
man_lines = [l.strip() for l in open(sys.argv[2]) if l.strip()]
opts = lambda ls: set(re.findall(r"--[a-z][a-z-]*", "\n".join(ls)))
if opts(help_lines) != opts(man_lines):
    sys.exit(f"{sys.argv[3]}: options {opts(help_lines) ^ opts(man_lines)} differ")
i = 0
for l in help_lines:  # every help line, in order, in the page
    while i < len(man_lines) and man_lines[i] != l:
        i += 1
    if i == len(man_lines):
        sys.exit(f"{sys.argv[3]}: man page lacks: {l}")
PY
done
MANWIDTH=200 man -M "$P/share/man" migbench 2>/dev/null | col -bx >"$TMP/man.txt"
grep -q 'migbench-monitor(1)' "$TMP/man.txt" || fail "migbench(1) does not list migbench-monitor(1)"
grep -q -- '--version' "$TMP/man.txt" || fail "migbench(1) lacks --version"
grep -q 'slurm.*Slurm: submit' "$TMP/man.txt" || fail "migbench(1) does not say that slurm submits"

# bash completion: commands, and a command's options, from the installed binary.
complete_words() {
    PATH="$P/bin:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _migbench; printf "%s\n" "${COMPREPLY[@]}"' _ "$P/share/bash-completion/completions/migbench" "$@"
}
[ "$(complete_words migbench mon)" = monitor ] || fail "completion of 'mon'"
[ "$(complete_words migbench monitor --prom)" = --prometheus ] || fail "completion of --prom"
[ "$(complete_words migbench mig s)" = show ] || fail "completion of 'mig s'"
# Values, not only names: report formats, GPU models, device specs, a model's profiles, runs.
[ "$(complete_words migbench report --format ht)" = html ] || fail "completion of --format"
[ "$(complete_words migbench layouts --gpu H100-S)" = H100-SXM5-80GB ] || fail "completion of --gpu"
complete_words migbench devices --device emu:A30 | grep -qx 'emu:A30-24GB:mig=on' ||
    fail "completion of --device"
[ "$(complete_words migbench layouts --gpu A30-24GB --check 4g.24gb,2g.12gb+)" = \
    "4g.24gb,2g.12gb+me" ] || fail "completion of a profile list"
[ "$(complete_words migbench run "$MB_SOURCE_DIR/examples/run/quick.yaml" --only sh)" = shared ] ||
    fail "completion of run --only"
grep -q '^#compdef migbench' "$P/share/zsh/site-functions/_migbench" || fail "zsh #compdef"

# cpack -G DEB: the same tree under /usr, with its library dependencies.
(cd "$TMP" && cpack -G DEB --config "$MB_BINARY_DIR/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1) ||
    { fail "cpack -G DEB"; tail -20 "$TMP/cpack.log" >&2; }
DEB=$(find "$TMP/pkg" -maxdepth 1 -name 'migbench_*.deb' 2>/dev/null | head -1)
if [ -n "$DEB" ]; then
    dpkg-deb -c "$DEB" >"$TMP/deb.txt"
    for f in ./usr/bin/migbench "./usr/lib/libmigbench.so.$ABI" ./usr/lib/pkgconfig/migbench.pc \
        ./usr/share/man/man1/migbench-run.1 ./usr/include/migbench/device.h \
        ./usr/lib/python3/dist-packages/migbench/__init__.py; do
        grep -q " $f" "$TMP/deb.txt" || fail "package lacks $f"
    done
    dpkg-deb -f "$DEB" Depends | grep -q 'libcjson1' || fail "package Depends lacks libcjson1"
    dpkg-deb -f "$DEB" Recommends | grep -q 'python3-torch' ||
        fail "package does not recommend python3-torch (the workloads need it)"
else
    fail "no .deb made"
fi
finish
