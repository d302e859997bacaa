# SPDX-License-Identifier: Apache-2.0
# bash completion for migbench. Commands and options are read from `migbench --help` and
# `migbench help COMMAND` when completing, so they always match the installed binary; so are the
# values: GPU models and device specs (--gpu, --device), a model's MIG profiles (layouts --check,
# --profiles), an experiment's runs (run --only) and the report formats (--format).
# The catalog's GPU models ("H100-SXM5-80GB" ...), from the binary.
_migbench_models() {
    "$1" layouts --list-gpus 2>/dev/null | awk '!/^#/ { print $1 }'
}

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
    --format | -f)
        mapfile -t COMPREPLY < <(compgen -W "table csv json html md" -- "$cur")
        return
        ;;
    --gpu)
        mapfile -t COMPREPLY < <(compgen -W "$(_migbench_models "$bin")" -- "$cur")
        return
        ;;
    --device | -d)
        local specs="auto host nvml:0 nvml:all" m
        for m in $(_migbench_models "$bin"); do specs+=" emu:$m emu:$m:mig=on"; done
        mapfile -t COMPREPLY < <(compgen -W "$specs" -- "$cur")
        return
        ;;
    --check | --profiles)
        [[ $cmd == layouts ]] || { compopt -o default 2>/dev/null; return; }
        # The profiles of the --gpu given on the line, after the last comma typed.
        local gpu="" k pre="${cur%"${cur##*,}"}"
        for ((k = at; k < COMP_CWORD; k++)); do
            [[ ${COMP_WORDS[k]} == --gpu ]] && gpu=${COMP_WORDS[k + 1]}
        done
        [[ -n $gpu ]] || return
        local profs
        profs=$("$bin" layouts --list-gpus --gpu "$gpu" 2>/dev/null | awk '!/^#/ { print $1 }')
        mapfile -t COMPREPLY < <(compgen -P "$pre" -W "$profs" -- "${cur##*,}")
        compopt -o nospace 2>/dev/null
        return
        ;;
    --only)
        # The runs of the experiment file on the line, from its dry run.
        local exp="" k
        for ((k = at + 1; k < COMP_CWORD; k++)); do
            [[ ${COMP_WORDS[k]} == *.yaml || ${COMP_WORDS[k]} == *.yml ]] && exp=${COMP_WORDS[k]}
        done
        [[ -n $exp ]] || return
        local runs
        runs=$("$bin" run "$exp" --dry-run --device emu:H100-80GB 2>/dev/null |
            awk '/^run +mode +jobs/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
        mapfile -t COMPREPLY < <(compgen -W "$runs" -- "$cur")
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
