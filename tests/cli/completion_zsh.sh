# SPDX-License-Identifier: Apache-2.0
# The zsh completion (completion/_migbench) completes what the bash one does (tests/cli/install.sh):
# commands, a command's options, and values: report formats, GPU models, device specs, a model's
# profiles after a comma, an experiment's runs. zsh runs the completion function outside the line
# editor, with compadd, compset, _describe and _files replaced by functions that print what
# would be offered (compadd filters by $PREFIX as zsh does; compset -P moves the text up to the
# last comma to $IPREFIX, which is put back in front of each match).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
command -v zsh >/dev/null || { fail "zsh is needed (scripts/install-deps.sh --test)"; finish; }
mkdir -p "$TMP/bin"
ln -s "$MIGBENCH" "$TMP/bin/migbench"
cat >"$TMP/mocks.zsh" <<'ZSH'
compadd() {
    local suffix="" arrays=0 w
    local -a got
    while (( $# )); do
        case $1 in
        -S) suffix=$2; shift 2 ;;
        -a) arrays=1; shift ;;
        --) shift; break ;;
        -*) shift ;;
        *) break ;;
        esac
    done
    if (( arrays )); then
        for w in "$@"; do got+=("${(@P)w}"); done
    else
        got=("$@")
    fi
    for w in "${got[@]}"; do
        if [[ $w == "$PREFIX"* ]]; then print -r -- "$IPREFIX$w$suffix"; fi
    done
}
compset() {
    [[ $1 == -P && $2 == '*,' && $PREFIX == *,* ]] || return 1
    IPREFIX=$IPREFIX${PREFIX%,*},
    PREFIX=${PREFIX##*,}
}
_describe() {
    local -a names
    names=("${(@P)2}")
    compadd -- "${names[@]%%:*}"
}
_files() { print -r -- "<files>"; }
ZSH
# complete_words WORD...: what zsh offers for the last word (the one being typed).
complete_words() {
    PATH="$TMP/bin:$PATH" zsh -f -c '. "$1"; shift 2; words=("$@"); CURRENT=$#; PREFIX=${words[-1]}
        IPREFIX=""; . "$0"' "$MB_SOURCE_DIR/completion/_migbench" "$TMP/mocks.zsh" x "$@"
}
check() {
    local want=$1
    shift
    local got
    got=$(complete_words "$@")
    [ "$got" = "$want" ] || fail "completing '$*': got '$got', want '$want'"
}
check monitor migbench mon
check --prometheus migbench monitor --prom
check show migbench mig s
check html migbench report --format ht
check H100-SXM5-80GB migbench layouts --gpu H100-S
complete_words migbench devices --device emu:A30 | grep -qx 'emu:A30-24GB:mig=on' ||
    fail "completion of --device"
check 4g.24gb,2g.12gb+me migbench layouts --gpu A30-24GB --check 4g.24gb,2g.12gb+
check shared migbench run "$MB_SOURCE_DIR/examples/run/quick.yaml" --only sh
check report migbench help rep
check "<files>" migbench report --results ""
check "<files>" migbench run ""
finish
