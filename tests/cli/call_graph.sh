# SPDX-License-Identifier: Apache-2.0
# No call circle in the library (docs/architecture.md, "Layers"): the calls between the folders of
# src/, and between the files of one folder (device/ included), read from the built object files,
# go one way. The check itself is shown to fail on made-up circles of both kinds.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
objs="$MB_BINARY_DIR/CMakeFiles/migbench_obj.dir"
run 0 python3 "$MB_SOURCE_DIR/scripts/call-graph.py" "$MB_SOURCE_DIR" "$objs"
expect_out '^call-graph: [0-9]+ files in [0-9]+ subsystems, 0 circle\(s\) between subsystems, 0 within one$'

# a/x.c calls b/y.c and b/y.c calls a/x.c: one circle, named with its calls.
mkdir -p "$TMP/s/src/a" "$TMP/s/src/b" "$TMP/o/src/a" "$TMP/o/src/b"
printf 'int y(int);\nint x(int n) { return n ? y(n - 1) : 0; }\n' >"$TMP/s/src/a/x.c"
printf 'int x(int);\nint y(int n) { return n ? x(n - 1) : 1; }\n' >"$TMP/s/src/b/y.c"
cc -c -o "$TMP/o/src/a/x.c.o" "$TMP/s/src/a/x.c" && cc -c -o "$TMP/o/src/b/y.c.o" "$TMP/s/src/b/y.c" ||
    fail "cannot compile the made-up circle"
run 1 python3 "$MB_SOURCE_DIR/scripts/call-graph.py" "$TMP/s" "$TMP/o"
expect_err '^call circle between subsystems: a, b$'
expect_err 'src/a/x\.c -> src/b/y\.c \(y\)'
# The same two files in one folder: a circle within it.
mkdir -p "$TMP/s2/src/a" "$TMP/o2/src/a"
cp "$TMP/s/src/a/x.c" "$TMP/s/src/b/y.c" "$TMP/s2/src/a/"
cp "$TMP/o/src/a/x.c.o" "$TMP/o2/src/a/x.c.o" && cp "$TMP/o/src/b/y.c.o" "$TMP/o2/src/a/y.c.o"
run 1 python3 "$MB_SOURCE_DIR/scripts/call-graph.py" "$TMP/s2" "$TMP/o2"
expect_err '^call circle between the files of a: src/a/x\.c, src/a/y\.c$'
# device/ is no exception (it was while its dispatcher and backends called each other).
mkdir -p "$TMP/s3/src/device" "$TMP/o3/src/device"
cp "$TMP/s2/src/a/x.c" "$TMP/s2/src/a/y.c" "$TMP/s3/src/device/"
cp "$TMP/o2/src/a/x.c.o" "$TMP/o2/src/a/y.c.o" "$TMP/o3/src/device/"
run 1 python3 "$MB_SOURCE_DIR/scripts/call-graph.py" "$TMP/s3" "$TMP/o3"
expect_err '^call circle between the files of device: src/device/x\.c, src/device/y\.c$'
# An object whose source is gone (left by a move) is not counted.
rm "$TMP/s/src/b/y.c"
run 0 python3 "$MB_SOURCE_DIR/scripts/call-graph.py" "$TMP/s" "$TMP/o"
expect_out 'call-graph: 1 files in 1 subsystems, 0 circle'
finish
