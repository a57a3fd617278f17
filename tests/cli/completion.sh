#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shell completion, driven as bash drives it (COMP_WORDS, COMP_CWORD, the
# function `complete` registered): commands, verbs and options come from the
# binary's own help, configs are *.ini files, option arguments follow the
# synopsis's metavariable, and after `--` the command line inside is
# completed. The zsh script is checked for syntax, and run under zsh's
# completion system in a pseudo-terminal when zsh is installed.
set -u

: "${CLOISTER:?set by meson}" "${CLOISTER_SRC:?set by meson}"
BASH_COMPLETION=/usr/share/bash-completion/bash_completion
if [ ! -r "$BASH_COMPLETION" ]; then
        echo "1..0 # SKIP bash-completion is not installed: tests/install-deps installs it"
        exit 77
fi
tmp=$(mktemp -d /tmp/cloister-completion.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
ok() { # ok STATUS NAME
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                fails=$((fails + 1))
        fi
}

# The completion runs the `cloister` on PATH, as a user's shell would.
mkdir "$tmp/bin" "$tmp/work" "$tmp/work/sub"
ln -s "$CLOISTER" "$tmp/bin/cloister"
export PATH="$tmp/bin:$PATH"
touch "$tmp/work/ws.ini" "$tmp/work/other.ini" "$tmp/work/notes.txt"
cd "$tmp/work" || exit 1

# shellcheck disable=SC1090
. "$BASH_COMPLETION"
# shellcheck disable=SC1091
. "$CLOISTER_SRC/packaging/completion/cloister.bash"

# complete LINE: the completions bash would offer at the end of LINE, one a line, sorted
complete_line() {
        local line=$1
        read -r -a COMP_WORDS <<<"$line"
        [[ $line == *' ' ]] && COMP_WORDS+=('')
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE=$line
        COMP_POINT=${#line}
        COMPREPLY=()
        # (compopt complains outside a real completion; what it sets is display only)
        _cloister cloister "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
        printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort -u | grep -v '^$'
}

# has LINE WORD...: every WORD is offered
has() {
        local line=$1 out w
        shift
        out=$(complete_line "$line")
        for w in "$@"; do
                grep -qxF -- "$w" <<<"$out" || { echo "#   '$line' does not offer '$w': $(tr '\n' ' ' <<<"$out")"; return 1; }
        done
}
# lacks LINE WORD...: no WORD is offered
lacks() {
        local line=$1 out w
        shift
        out=$(complete_line "$line")
        for w in "$@"; do
                if grep -qxF -- "$w" <<<"$out"; then echo "#   '$line' offers '$w'"; return 1; fi
        done
}

complete -p cloister 2>/dev/null | grep -q -- '-F _cloister'
ok $? "the_script_registers_a_completion_for_cloister"

mapfile -t cmds < <("$CLOISTER" help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
has "cloister " "${cmds[@]}"
ok $? "every_command_of_cloister_help_completes (${#cmds[@]})"
[ "$(complete_line "cloister ru")" = run ]
ok $? "a_prefix_completes_to_its_command"
has "cloister --" --version --help
ok $? "top_level_options_complete"
has "cloister help " run check token
ok $? "help_completes_command_names"

has "cloister token " issue verify revoke introspect && lacks "cloister token " ws.ini
ok $? "token_verbs_complete_from_the_synopsis"
has "cloister secret " add list rm
ok $? "secret_verbs_complete"
has "cloister broker " rotate-key public-key ws.ini other.ini
ok $? "broker_offers_its_verb_and_configs"

has "cloister check --" --strict --quiet --help
ok $? "check_options_complete_from_its_manual"
has "cloister token verify x --" --aud --scope --skew --now --json --keys --workspace --config --socket
ok $? "token_verify_options_complete"
has "cloister export ws.ini -" --commit --commits --mbox --discard -o --yes
ok $? "short_and_long_options_complete"

has "cloister check " ws.ini other.ini sub && lacks "cloister check " notes.txt
ok $? "a_config_argument_completes_ini_files_and_directories_only"
has "cloister run --no-mount " ws.ini
ok $? "configs_complete_after_an_option_without_argument"
has "cloister secret add k --config " ws.ini && lacks "cloister secret add k --config " notes.txt
ok $? "option_argument_CONFIG_completes_ini_files"
has "cloister export ws.ini --mbox -o " notes.txt ws.ini
ok $? "option_argument_FILE_completes_any_file"
[ -z "$(complete_line "cloister token issue git --ttl ")" ]
ok $? "an_argument_cloister_cannot_guess_offers_nothing"

has "cloister run ws.ini -- ech" echo
ok $? "after_--_the_command_inside_completes_as_a_command"
has "cloister run ws.ini -- ls --al" --all
ok $? "and_its_own_options_complete_as_for_that_command"

# zsh
zsh_script=$CLOISTER_SRC/packaging/completion/_cloister
if command -v zsh >/dev/null; then
        zsh -n "$zsh_script"
        ok $? "the_zsh_completion_parses"
        # Drive the real completion system: an interactive zsh in a
        # pseudo-terminal (zpty), compinit with our function first in
        # fpath, then a line and a TAB; what zsh draws back is read.
        cat >"$tmp/zdrive.zsh" <<'EOZ'
zmodload zsh/zpty
zpty z "TERM=xterm zsh -f -i"
zpty -w z "PS1='%% '; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; print XX\$((1+1))READY"
zpty -r z out '*XX2READY*'
zpty -w -n z "$2"$'\t'
sleep 3
out=''
while zpty -r -t z chunk; do out+=$chunk; done
print -r -- "$out"
zpty -d z
EOZ
        cp "$zsh_script" "$tmp/_cloister"
        zout=$(timeout 60 zsh -f "$tmp/zdrive.zsh" "$tmp" "cloister tok" 2>&1)
        grep -q "cloister token" <<<"$zout"
        ok $? "zsh_completes_a_command_prefix"
        zout=$(timeout 60 zsh -f "$tmp/zdrive.zsh" "$tmp" "cloister token " 2>&1)
        grep -q "introspect *issue *revoke *verify" <<<"$zout"
        ok $? "zsh_lists_the_verbs_of_a_command"
else
        echo "ok $((n + 1)) - zsh_completion # SKIP zsh is not installed"
        n=$((n + 1))
fi

echo "1..$n"
[ "$fails" = 0 ]
