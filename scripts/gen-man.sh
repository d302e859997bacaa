#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes migbench(1) and migbench-COMMAND(1) man pages into OUTDIR from the text the binary
# prints for `migbench --help` and `migbench help COMMAND`: the pages are that text, verbatim,
# so they cannot drift from the options.
# usage: gen-man.sh MIGBENCH OUTDIR VERSION
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: gen-man.sh MIGBENCH OUTDIR VERSION" >&2; exit 2; }
bin=$1 out=$2 version=$3
mkdir -p "$out"

# roff-safe verbatim text: backslashes, hyphens (so that "--device" stays searchable), and
# lines that would start a request.
roff() {
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

header() { # NAME SECTION-TITLE
    printf '.TH %s 1 "" "migbench %s" "migbench manual"\n' "$1" "$version"
}

main_help=$("$bin" --help)
# "  name   summary" lines between "commands:" and the blank line after them.
commands=$(printf '%s\n' "$main_help" | awk '/^commands:/{on=1;next} on&&/^$/{exit} on{print $1}')
[ -n "$commands" ] || { echo "gen-man.sh: no commands in '$bin --help'" >&2; exit 1; }

{
    header MIGBENCH
    printf '.SH NAME\nmigbench \\- measure and plan deep\\-learning training on shared GPUs\n'
    printf '.SH SYNOPSIS\n.nf\n'
    printf '%s\n' "$main_help" | roff
    printf '.fi\n.SH COMMANDS\nEach command has its own page:\n'
    for c in $commands; do
        printf '.TP\n\\fBmigbench\\-%s\\fR(1)\n' "$c"
        printf '%s\n' "$main_help" | awk -v c="$c" '$1==c{$1="";sub(/^ +/,"");print}' | roff
    done
    printf '.SH SEE ALSO\nThe documentation under share/doc/migbench.\n'
} >"$out/migbench.1"

for c in $commands; do
    summary=$(printf '%s\n' "$main_help" | awk -v c="$c" '$1==c{$1="";sub(/^ +/,"");print}')
    upper=$(printf 'MIGBENCH-%s' "$c" | tr '[:lower:]' '[:upper:]')
    {
        header "$upper"
        printf '.SH NAME\nmigbench\\-%s \\- %s\n' "$c" "$(printf '%s' "$summary" | roff)"
        printf '.SH DESCRIPTION\n.nf\n'
        "$bin" help "$c" | roff
        printf '.fi\n.SH SEE ALSO\n\\fBmigbench\\fR(1)\n'
    } >"$out/migbench-$c.1"
done
