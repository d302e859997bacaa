# SPDX-License-Identifier: Apache-2.0
# scripts/func-length.py: a 101-line function fails the check (named with file, line, length), a
# 100-line one passes, the allow-list excuses exactly the functions it names, and the tree itself
# passes with scripts/func-length.allow.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
CHECK="$MB_SOURCE_DIR/scripts/func-length.py"

# fixture FILE NAME LENGTH: a C file whose function NAME starts on line 3 (its `{` on line 4) and
# whose closing `}` lies LENGTH lines below its `{`.
fixture() {
    {
        echo '/* SPDX-License-Identifier: Apache-2.0 */'
        echo '#include <stdio.h>'
        echo "static int $2(int x,"
        echo '{'
        for _ in $(seq 1 $(($3 - 2))); do echo '    x++;'; done
        echo '    return x;'
        echo '}'
        echo 'int other(void)'
        echo '{'
        echo '    return 0;'
        echo '}'
    } >"$1"
}

mkdir -p "$TMP/ok" "$TMP/over/sub"
fixture "$TMP/ok/a.c" exactly_100 100
fixture "$TMP/over/sub/b.c" one_too_many 101
[ "$(grep -c 'x++' "$TMP/ok/a.c")" = 98 ] || fail "fixture generator is off"

run 0 python3 "$CHECK" "$TMP/ok"
expect_no_out
[ ! -s "$TMP/err" ] || fail "a 100-line function should pass silently"

run 1 python3 "$CHECK" "$TMP/ok" "$TMP/over"
expect_err "^$TMP/over/sub/b\\.c:3: function one_too_many is 101 lines \\(limit 100\\)$"
[ "$(wc -l <"$TMP/err")" = 1 ] || fail "only the 101-line function should be named"

run 1 python3 "$CHECK" "$TMP/over/sub/b.c"
expect_err 'one_too_many is 101 lines'

run 0 python3 "$CHECK" --limit 101 "$TMP/over"
run 1 python3 "$CHECK" --limit 99 "$TMP/ok"
expect_err 'exactly_100 is 100 lines \(limit 99\)'

# The allow-list excuses the named function only; an entry matching nothing is reported as stale.
printf '# comment\n%s one_too_many  # owner\n%s gone\n' "$TMP/over/sub/b.c" "$TMP/ok/a.c" \
    >"$TMP/allow"
run 0 python3 "$CHECK" --allow "$TMP/allow" "$TMP/over" "$TMP/ok"
expect_err "stale allow-list entry .*: $TMP/ok/a\\.c gone$"
printf '%s other\n' "$TMP/over/sub/b.c" >"$TMP/allow2"
run 1 python3 "$CHECK" --allow "$TMP/allow2" "$TMP/over"
expect_err 'one_too_many is 101 lines'

# Bad arguments and allow-lists are usage errors.
run 2 python3 "$CHECK"
expect_err 'no path given'
run 2 python3 "$CHECK" --limit x "$TMP/ok"
expect_err 'not a positive number'
printf 'one-field\n' >"$TMP/allow3"
run 2 python3 "$CHECK" --allow "$TMP/allow3" "$TMP/ok"
expect_err "allow3:1: expected .path function."
run 2 python3 "$CHECK" --allow "$TMP/missing" "$TMP/ok"

# The project itself: no function over 100 lines outside the allow-list.
cd "$MB_SOURCE_DIR"
run 0 python3 "$CHECK" --allow scripts/func-length.allow src cli tests/fake-nvml

finish
