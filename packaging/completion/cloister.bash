# SPDX-License-Identifier: MIT
# bash completion for cloister(1): commands, their verbs and options, and
# workspace configs (*.ini) where the synopsis says CONFIG; after `--` in
# `cloister run`, the command to run.
#
# It asks the cloister being completed: `cloister help` lists the commands
# and `cloister help COMMAND` prints the synopsis and options of the
# command's manual page. So a new command, verb or option completes without
# an edit here, and the completion never offers what the installed binary
# doesn't have. Answers are kept for the rest of the shell session.

declare -gA _cloister_help_cache

# _cloister_help EXE [COMMAND]: the help text, cached
_cloister_help()
{
        local key="$1|${2-}"
        if [[ -z ${_cloister_help_cache[$key]+set} ]]; then
                _cloister_help_cache[$key]=$(LC_ALL=C "$1" help ${2:+"$2"} 2>/dev/null)
        fi
        printf '%s\n' "${_cloister_help_cache[$key]}"
}

_cloister_commands()
{
        _cloister_help "$1" | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'
}

# _cloister_section TEXT NAME: one section of a command's help
_cloister_section()
{
        awk -v want="$2" '/^[^ ]/ { on = ($0 == want); next } on' <<<"$1"
}

_cloister()
{
        local cur prev words cword
        _init_completion || return

        local exe=${words[0]} cmd='' cmd_i=0 i
        for ((i = 1; i < cword; i++)); do
                if [[ ${words[i]} != -* ]]; then
                        cmd=${words[i]} cmd_i=$i
                        break
                fi
        done
        if [[ -z $cmd ]]; then
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W '--version --help' -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$(_cloister_commands "$exe")" -- "$cur"))
                fi
                return
        fi
        if [[ $cmd == help ]]; then
                ((cword == cmd_i + 1)) &&
                        COMPREPLY=($(compgen -W "$(_cloister_commands "$exe")" -- "$cur"))
                return
        fi
        # After `--` (cloister run CONFIG -- CMD ...): complete CMD as its own command line.
        for ((i = cmd_i + 1; i < cword; i++)); do
                if [[ ${words[i]} == -- ]]; then
                        _command_offset $((i + 1))
                        return
                fi
        done

        local help synopsis meta verbs
        help=$(_cloister_help "$exe" "$cmd")
        synopsis=$(_cloister_section "$help" SYNOPSIS)

        # An option's argument: what the synopsis names it (--config CONFIG, -o FILE).
        if [[ $prev == -* ]]; then
                meta=$(grep -oE -- "(^|[][ |])$prev[ =][A-Z][A-Z_]*" <<<"$synopsis" | head -1)
                meta=${meta##*[ =]}
                case $meta in
                CONFIG) _filedir ini; return ;;
                FILE | PATH | DIR) _filedir; return ;;
                ?*) return ;; # a value cloister can't guess (SCOPE, SECONDS, ...)
                esac
        fi
        if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$(grep -oE -- '(^|[^A-Za-z0-9-])--?[A-Za-z][A-Za-z0-9-]*' <<<"$help" |
                        sed 's/^[^-]*//' | sort -u) --help" -- "$cur"))
                return
        fi
        # A verb right after the command (token issue, secret add, broker
        # rotate-key), and a config too if a synopsis line takes one there
        # (cloister broker CONFIG...).
        if ((cword == cmd_i + 1)); then
                verbs=$(awk -v c="$cmd" '$1 == "cloister" && $2 == c && $3 ~ /^[a-z][a-z-]*$/ { print $3 }' \
                        <<<"$synopsis" | sort -u)
                if [[ -n $verbs ]]; then
                        COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
                        # (options in brackets before CONFIG, as in [--quiet] CONFIG..., do not count)
                        if awk -v c="$cmd" '{ gsub(/\[[^]]*\]/, "") } $1 == "cloister" && $2 == c && $3 ~ /^CONFIG/ { f = 1 } END { exit !f }' \
                                <<<"$synopsis"; then
                                local verb_reply=("${COMPREPLY[@]}")
                                _filedir ini
                                COMPREPLY+=("${verb_reply[@]}")
                        fi
                        return
                fi
        fi
        [[ $synopsis == *CONFIG* ]] && _filedir ini
}
complete -F _cloister cloister
