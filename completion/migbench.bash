# SPDX-License-Identifier: Apache-2.0
# bash completion for migbench. Commands and options are read from `migbench --help` and
# `migbench help COMMAND` when completing, so they always match the installed binary.
_migbench() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local bin=${COMP_WORDS[0]} cmd="" at=0 i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) cmd=${COMP_WORDS[i]} at=$i; break ;;
        esac
    done
    COMPREPLY=()
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "--help --version --verbose --quiet" -- "$cur")
        else
            local cmds
            cmds=$("$bin" --help 2>/dev/null |
                awk '/^commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
            mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
        fi
        return
    fi
    case $prev in
    --results | --csv | --prometheus | --runtime-dir | --catalog | --output | -o)
        compopt -o default 2>/dev/null
        return
        ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$("$bin" help "$cmd" 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u)
        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
        return
    fi
    if [[ $cmd == mig && $COMP_CWORD -eq $((at + 1)) ]]; then
        mapfile -t COMPREPLY < <(compgen -W "apply show clear" -- "$cur")
        return
    fi
    if [[ $cmd == help && $COMP_CWORD -eq $((at + 1)) ]]; then
        local cmds
        cmds=$("$bin" --help 2>/dev/null |
            awk '/^commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
        mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
        return
    fi
    compopt -o default 2>/dev/null
}
complete -F _migbench migbench
