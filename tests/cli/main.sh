# SPDX-License-Identifier: Apache-2.0
# The top-level command line: version, help, unknown commands and options.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"

run 0 "$MIGBENCH" --version
expect_out '^migbench [0-9]+\.[0-9]+\.[0-9]+$'

run 0 "$MIGBENCH" --help
expect_out 'usage: migbench'
expect_out 'help'

run 2 "$MIGBENCH"
expect_err 'usage: migbench'

run 2 "$MIGBENCH" frobnicate
expect_err "unknown command 'frobnicate'"
expect_no_out

run 2 "$MIGBENCH" --bogus
expect_err "unknown option '--bogus'"

run 0 "$MIGBENCH" help help
expect_out 'usage: migbench help'

run 2 "$MIGBENCH" help nosuch
expect_err "unknown command 'nosuch'"

# Every listed command answers --help with its usage and exit 0.
for cmd in $("$MIGBENCH" --help | awk '/^commands:/{f=1;next} f && /^  [a-z]/{print $1}'); do
    run 0 "$MIGBENCH" "$cmd" --help
    expect_out "usage: migbench $cmd"
done

# The command list (and so migbench(1)) says what each command does: slurm submits.
run 0 "$MIGBENCH" --help
expect_out '^ +slurm +Slurm: submit '
finish
