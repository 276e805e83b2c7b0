# safe-run integration for bash: loaded with `bash --init-file` after startup.bash, and sourced
# again into a live shell whose hooks a command removed (so every step here may find its own
# earlier self, and must leave one copy). The header written above it by safe-run defines:
#   __sr_nonce         the per-run secret that every mark carries
#   __sr_cmd           the file holding the command text
#   __sr_status_file   where each typed line records its end (see `__sr_line_end`)
# Everything here must work under `set -u` and `set -e`, and must not disturb `$?`.

# Marks go to the terminal itself, so that a command that sends the shell's output elsewhere
# (`exec >build.log 2>&1`) neither loses them nor finds the nonce in its file; to the shell's
# output where the terminal cannot be opened by name. Which of the two is decided here, once, as
# is where the last process id is read (see `__sr_start`): hiding a redirection's error on every
# line would cost bash an open and six other system calls each time, four times a command.
if { builtin : >/dev/tty; } 2>/dev/null; then __sr_marks_to=/dev/tty; else __sr_marks_to=/dev/stdout; fi
__sr_pid_file=/proc/sys/kernel/ns_last_pid
if ! { builtin read -r __sr_start_pid <"$__sr_pid_file"; } 2>/dev/null; then
    __sr_pid_file=/dev/null  # where /proc hides it: read as no id
fi
__sr_mark() {
    builtin printf '\033]633;%s;%s\007' "$1" "$__sr_nonce" >"$__sr_marks_to"
}

__sr_running=

# `exit` in an interactive bash prints the word "exit" on stderr before the shell goes: the
# shell's word, not the command's. The EXIT trap runs right after it and sends X, so safe-run
# takes exactly that word back out of the end of the output. The other ways out that run the
# trap print no word: errexit (so no X while `set -e` is on) and a fatal signal (safe-run sees
# the shell killed by it, and takes nothing back). An EXIT trap from the user's files still
# runs, after ours; one the command sets replaces ours, and then the word stays.
#
# The EXIT and ERR traps of the user's files (ERR: see `__sr_on_err`) are kept in __sr_exit_trap
# and __sr_err_trap, for safe-run's to run; the TERM trap's text is read too, for the check
# below. Read through a file of the private directory (a command substitution would fork the
# shell), and here, not in a function, which does not see the ERR trap. One of safe-run's, from
# an earlier load, leaves the user's kept already.
__sr_exit_trap=${__sr_exit_trap-}
__sr_err_trap=${__sr_err_trap-}
__sr_keep_trap() {
    builtin local __sr_kept=$1
    builtin eval "builtin set -- $2"
    case ${3-} in
        __sr_on_*) ;;
        *) builtin printf -v "$__sr_kept" '%s' "${3-}" ;;
    esac
}
for __sr_signal in EXIT ERR TERM; do
    if { builtin trap -p "$__sr_signal" >|"${__sr_cmd%/*}/trap"; } 2>/dev/null; then
        IFS= builtin read -r -d '' __sr_trap_text <"${__sr_cmd%/*}/trap" || builtin :
    else
        __sr_trap_text=$(builtin trap -p "$__sr_signal")
    fi
    case $__sr_signal in
        TERM) __sr_term_trap=$__sr_trap_text ;;
        *) __sr_keep_trap "__sr_${__sr_signal,,}_trap" "$__sr_trap_text" ;;
    esac
done
builtin unset __sr_signal __sr_trap_text
__sr_on_exit() {
    builtin local __sr_status=$?
    if [[ $- != *e* ]]; then
        __sr_mark X
    fi
    builtin return "$__sr_status"
}
builtin trap '__sr_on_exit && builtin :; builtin eval -- "$__sr_exit_trap"' EXIT

# An interactive bash ignores SIGTERM, at a terminal too: a command's `kill $$` does not end it,
# where `bash -c` would end with 143. A trap that does no more keeps that, and says so (T) for the
# result to tell. A TERM trap of the user's files is theirs, and kept.
if [[ -z $__sr_term_trap || $__sr_term_trap == *__sr_mark* ]]; then
    builtin trap '__sr_mark T' TERM
fi
builtin unset __sr_term_trap

# What safe-run adds to a line must fail nowhere a prompt would not. Its own steps are called in
# `&&` lists (`__sr_start && builtin :`), which neither errexit nor the ERR trap looks at. eval
# cannot be: a command in such a list would have `set -e` off inside it. eval returns the status
# of the command's last list, and a failure there reaches eval only where the command's own
# `set -e` let it pass (`[ -f x ] && cat x`), or with -e off. At a prompt that ends nothing and
# fires no ERR trap; after eval it would end the shell and fire the trap a second time. So the
# ERR trap is ours: for eval it turns -e off until the line's end puts it back, and for the
# command's own failures it runs the user's trap (kept in __sr_err_trap, above). One that a
# command sets replaces ours, and then eval's status counts again.
__sr_errexit=
# The user's trap runs in the trap itself, as theirs would (not inside a function of ours), when
# `__sr_on_err` returns the failure's status; it returns 0 for a status of safe-run's own.
__sr_on_err() {
    builtin local __sr_status=$?
    case $BASH_COMMAND in
        'builtin eval -- "$__sr_text"')
            if [[ $- == *e* ]]; then
                builtin set +e
                __sr_errexit=1
            fi
            builtin return 0 ;;
        'builtin return "$__sr_hook_status"')  # a prompt hook of ours (see `__sr_precmd`)
            builtin return 0 ;;
    esac
    builtin return "$__sr_status"
}
builtin trap '__sr_on_err || builtin eval -- "$__sr_err_trap"' ERR

# Run before the command: C marks where its output begins, and carries the last process id given
# out then: what the shell started before it (its preexec hooks') is not the command's. It reads
# the command into __sr_text and returns the status it was called with, so that the command's `$?`
# is the last command's, as at a prompt (a command substitution in eval's words would make it 0).
__sr_start() {
    builtin local __sr_status=$?
    __sr_running=1
    builtin read -r __sr_start_pid <"$__sr_pid_file" || builtin :
    IFS= builtin read -r -d '' __sr_text <"$__sr_cmd" || builtin :
    __sr_mark "C;$__sr_start_pid"
    builtin return "$__sr_status"
}

# The end of every typed line (see `posix.LINE_END`): the line's status and the last process id
# given out then, recorded, then D; `$?` stays the line's. `set -e`, if eval's status turned it
# off (see `__sr_on_err`), is on again.
__sr_line_end() {
    builtin local __sr_line_status=$? __sr_last_pid=
    __sr_running=
    if [[ -n $__sr_errexit ]]; then
        __sr_errexit=
        builtin set -e
    fi
    builtin read -r __sr_last_pid <"$__sr_pid_file" || builtin :
    builtin echo "$__sr_line_status $__sr_last_pid" >>"$__sr_status_file"
    __sr_mark "D;$__sr_line_status"
    builtin return "$__sr_line_status"
}

# The line typed for each command is ` __sr_c`: the line editor reads what is typed one byte at
# a time, so the line is kept short and bash expands it as it reads it into C, the command read
# from its file, run at the top level as if typed at the prompt, and the line's own end. Where
# aliases are off (`shopt -u expand_aliases`, `unalias -a`), `__sr_c` is this function, which does
# the same with the command inside it (its `local` and `declare` are then the function's), and
# makes the alias again for the next line.
__sr_line='__sr_start && builtin :; builtin eval -- "$__sr_text"; __sr_line_end && builtin :'
function __sr_c {
    builtin local __sr_status=$?
    builtin alias __sr_c="$__sr_line"
    __sr_set_status "$__sr_status" && builtin :
    __sr_start && builtin :
    builtin eval -- "$__sr_text"
    __sr_line_end && builtin :
}
builtin alias __sr_c="$__sr_line"

# The typed line sends D at its own end (`__sr_line_end`). A line the shell abandoned before
# its end (Ctrl-C, an error that aborts it) has not: the first hook, with `$?` still the line's
# status, records it and sends D in its place.
__sr_set_status() {
    builtin return "$1"
}

# A prompt hook of ours returns the status it was called with, for the hooks after it (a string
# PROMPT_COMMAND passes it on); under `set -e` it returns 0, since a hook that fails then ends the
# shell, at a terminal too. Its status variable has a name of its own: `__sr_on_err` knows its
# return by that.
__sr_precmd() {
    builtin local __sr_hook_status=$?
    if [ -n "$__sr_running" ]; then
        __sr_set_status "$__sr_hook_status" && builtin :
        __sr_line_end && builtin :
    fi
    [[ $- == *e* ]] || builtin return "$__sr_hook_status"
}

__sr_prompt_start=$'\[\033]633;A;'"$__sr_nonce"$'\007\]'
__sr_prompt_end=$'\[\033]633;B;'"$__sr_nonce"$'\007\]'

# Last in PROMPT_COMMAND: themes that rebuild PS1 at every prompt lose the marks, so put them back.
# bash draws its prompt on its standard error: after a command's `exec 2>build.log` the prompt
# goes into that file, as it would at a terminal, and safe-run would wait for a prompt mark that
# never comes. Then the prompt goes without its marks (the file gets the prompt, not the nonce),
# and the hook says itself that the prompt is next (B, to the terminal): all the prompt's hooks
# have run, and what reads the terminal now is the line editor. Whether standard error is still
# the terminal is asked of bash's own descriptor of it (255).
__sr_wrap_ps1() {
    builtin local __sr_hook_status=$?
    case "${PS1-}" in
        *"$__sr_prompt_end"*) ;;
        *) PS1="$__sr_prompt_start${PS1-}$__sr_prompt_end" ;;
    esac
    if [[ ! /dev/fd/2 -ef /dev/fd/255 ]]; then
        PS1=${PS1//"$__sr_prompt_start"/}
        PS1=${PS1//"$__sr_prompt_end"/}
        __sr_mark B
    fi
    [[ $- == *e* ]] || builtin return "$__sr_hook_status"
}

# First and last in PROMPT_COMMAND, once: an earlier load's entries are taken out first.
if [[ -v PROMPT_COMMAND && "${PROMPT_COMMAND@a}" == *a* ]]; then
    __sr_kept=()
    for __sr_entry in "${PROMPT_COMMAND[@]}"; do
        case $__sr_entry in __sr_precmd | __sr_wrap_ps1) ;; *) __sr_kept+=("$__sr_entry") ;; esac
    done
    PROMPT_COMMAND=(__sr_precmd "${__sr_kept[@]}" __sr_wrap_ps1)
    builtin unset __sr_kept __sr_entry
else
    __sr_kept=${PROMPT_COMMAND-}
    __sr_kept=${__sr_kept#__sr_precmd$'\n'}
    __sr_kept=${__sr_kept%$'\n'__sr_wrap_ps1}
    if [ "$__sr_kept" = __sr_precmd$'\n'__sr_wrap_ps1 ]; then __sr_kept=; fi
    PROMPT_COMMAND="__sr_precmd"$'\n'"${__sr_kept:+$__sr_kept$'\n'}__sr_wrap_ps1"
    builtin unset __sr_kept
fi
