# SPDX-License-Identifier: BSD-2-Clause
# tests/client/completion.sh - issue 27: the bash and zsh completions of
# semctl (cli/semctl.bash-completion, cli/semctl.zsh-completion) in
# the real shells: commands, a command's options, cluster's actions, and the
# semaphore names of a live semd (`semctl list` with the -s of the line or
# $SEMD_SERVER), bounded in time and in count, none from a server that is
# not there or does not answer.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120

start_semd d || exit 1
S() { "$SEMCTL" -s "$d_UNIX" "$@"; }
# The completions run `semctl`: the one built here.
SEMCTL_DIR=$(dirname "$SEMCTL")
# `semctl list` has a second by default: more here, where a sanitizer or a
# loaded machine may make 300 names take longer (the mute server below
# checks the default bound).
SEMCTL_COMPLETION_TIMEOUT=30
export SEMCTL_COMPLETION_TIMEOUT

# comp WORDS...: what the bash completion offers for the last word
comp() {
	PATH="$SEMCTL_DIR:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _semctl; echo "${COMPREPLY[*]}"' \
		_ "$top_srcdir/cli/semctl.bash-completion" "$@"
}

# --- commands, options, actions -------------------------------------------------
expect_eq "bash: a command" "cluster" "$(comp semctl clu)"
expect_eq "bash: down's options" "--priority --progress" "$(comp semctl down x --pr)"
expect_eq "bash: down's option, after the name" "--timeout" "$(comp semctl down x --ti)"
expect_eq "bash: not another command's option" "" "$(comp semctl down x --fo)"
expect_eq "bash: cluster's actions" "status add remove transfer" "$(comp semctl cluster '')"
expect_eq "bash: cluster's action, begun" "transfer" "$(comp semctl -s "$d_UNIX" cluster t)"

# --- names ------------------------------------------------------------------------
S create jobs/a --limit 1 >/dev/null
S create 'jobs/b c' --limit 2 >/dev/null
S create db:main --limit 1 >/dev/null
S create over --limit 2 >/dev/null
S down over -n 2 >/dev/null
S set-limit over 1 >/dev/null
expect_eq "the list shows a name over its limit" "1 over" \
	"$(S list over | awk 'NR == 2 { print $3, $4 }')"
all='db:main jobs/a jobs/b\ c over'
expect_eq "bash: names after -s ADDR" "$all" "$(comp semctl -s "$d_UNIX" info '')"
expect_eq "bash: names with a prefix" 'jobs/a jobs/b\ c' "$(comp semctl -s "$d_UNIX" delete jobs/)"
expect_eq "bash: names over TCP, --server=ADDR" "over" "$(comp semctl --server="$d_TCP" up o)"
expect_eq "bash: names from \$SEMD_SERVER" "db:main" "$(SEMD_SERVER=$d_UNIX comp semctl renew d)"
expect_eq "bash: down's second name, -s after the command" "over" \
	"$(comp semctl down jobs/a -s "$d_UNIX" o)"
expect_eq "bash: list --after NAME" 'jobs/a jobs/b\ c' "$(comp semctl -s "$d_UNIX" list --after j)"
expect_eq "bash: no name where a number goes" "" "$(comp semctl -s "$d_UNIX" set-limit over '')"
expect_eq "bash: no name for create" "" "$(comp semctl -s "$d_UNIX" create j)"
got=$(comp semctl -s "$d_UNIX" info -)
ok "bash: an option word is completed with options, not names" \
	sh -c 'case " $1 " in *" --max "*" -s "*) ! echo "$1" | grep -q jobs;; *) false;; esac' _ "$got"
expect_eq "bash: no server, no names (and nothing printed)" "" \
	"$(comp semctl -s "unix:$T/none.sock" info '' 2>&1)"

# At most 300 names: trydown --limit creates the missing names, 16 a call.
seq -f 'many/%03g' 1 310 | xargs -n 16 "$SEMCTL" -s "$d_UNIX" trydown --limit 1 >/dev/null
expect_eq "310 names made" 310 "$(S list many/ | sed 1d | wc -l)"
expect_eq "bash: at most 300 names" 300 "$(comp semctl -s "$d_UNIX" info many/ | wc -w)"

# A server that takes the connection and never answers: no names, in about
# the second the completion gives `semctl list` (10 s allows for a loaded
# machine; without the bound semctl would wait for ever).
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
time.sleep(100)' "$T/mute.sock" &
PIDS_TO_KILL="$PIDS_TO_KILL $!"
t_wait_for 10 test -S "$T/mute.sock" || echo "the mute server did not start" >&2
t0=$(date +%s)
got=$(unset SEMCTL_COMPLETION_TIMEOUT; comp semctl -s "unix:$T/mute.sock" info '' 2>&1)
t1=$(date +%s)
expect_eq "bash: a server that does not answer: no names" "" "$got"
ok "bash: ... and the completion returns ($((t1 - t0)) s)" test $((t1 - t0)) -lt 10

# --- zsh --------------------------------------------------------------------------
if ! command -v zsh >/dev/null; then
	echo "# SKIP zsh: not installed (scripts/deps.sh installs it)"
	t_done
	exit
fi
mkdir "$T/zfunc"
cp "$top_srcdir/cli/semctl.zsh-completion" "$T/zfunc/_semctl"
ok "zsh: _semctl parses (zsh -n)" zsh -n "$T/zfunc/_semctl"

# An interactive zsh on a pseudo-terminal (zsh/zpty), with compinit and
# _semctl: each LINE is typed, then a widget that puts every match of the
# word into the line (_all_matches), then one that writes the line to OUT
# (a line for each: the harness waits for them, then ends the shell).
cat >"$T/harness.zsh" <<'EOF'
zmodload zsh/zpty || exit 1
dir=$1 out=$2
shift 2
zpty z zsh -f -i
zpty -w z "PS1='' PS2='' RPS1=''; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "zstyle ':completion:all-matches:*' completer _all_matches _complete"
zpty -w z "zstyle ':completion:all-matches:*' insert true"
zpty -w z "zle -C all-matches complete-word _generic; bindkey '^Xa' all-matches"
zpty -w z "dump() { print -r -- \"\$BUFFER\" >>${(q)out}; BUFFER=''; }; zle -N dump; bindkey '^Xd' dump"
for line; do
	zpty -w -n z "$line"$'\C-xa\C-xd'
done
# until OUT has a line a LINE (at most 30 s), reading what the shell echoes
i=0 got=()
while (( i++ < 600 && $#got < $# )); do
	zpty -r -t z junk '*' 2>/dev/null
	sleep 0.05
	[[ -f $out ]] && got=("${(@f)$(<$out)}")
done
zpty -d z
EOF
PATH="$SEMCTL_DIR:$PATH" timeout 60 zsh -f "$T/harness.zsh" "$T/zfunc" "$T/zsh.out" \
	'semctl clu' 'semctl cluster ' 'semctl down x --ti' "semctl -s $d_UNIX info jobs/" \
	"semctl -s unix:$T/none.sock info j"
{
	echo 'semctl cluster '
	echo 'semctl cluster add remove status transfer '
	echo 'semctl down x --timeout '
	echo "semctl -s $d_UNIX info jobs/a jobs/b\\ c "
	echo "semctl -s unix:$T/none.sock info j"
} >"$T/zsh.want"
ok "zsh: a command, cluster's actions, an option, names, none without a server" \
	diff -u "$T/zsh.want" "$T/zsh.out"

t_done
