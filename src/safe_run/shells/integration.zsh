# safe-run integration for zsh: the rest of $ZDOTDIR/.zshrc in a private directory, after
# startup.zsh, and sourced again into a live shell whose hooks a command removed (so every step
# here may find its own earlier self, and must leave one copy). The header defines:
#   __sr_nonce         the per-run secret that every mark carries
#   __sr_cmd           the file holding the command text
#   __sr_status_file   where each typed line records its end (see `__sr_line_end`)
# Everything here must work under `set -u` (NO_UNSET) and must not disturb `$?`.

# Marks go to the terminal itself, so that a command that sends the shell's output elsewhere
# (`exec >build.log 2>&1`) neither loses them nor finds the nonce in its file; to the shell's
# output where the terminal cannot be opened by name. Which of the two is decided here, once, as
# is where the last process id is read (see `__sr_start`): hiding a redirection's error on every
# line would cost the shell an open and more system calls each time, four times a command.
if { : >/dev/tty; } 2>/dev/null; then typeset -g __sr_marks_to=/dev/tty; else typeset -g __sr_marks_to=/dev/stdout; fi
typeset -g __sr_pid_file=/proc/sys/kernel/ns_last_pid
if ! { : <"$__sr_pid_file"; } 2>/dev/null; then
    __sr_pid_file=/dev/null  # where /proc hides it: read as no id
fi
__sr_mark() {
    builtin printf '\033]633;%s;%s\007' "$1" "$__sr_nonce" >"$__sr_marks_to"
}

typeset -g __sr_running=

# An interactive zsh ignores SIGTERM, at a terminal too: a command's `kill $$` does not end it,
# where `zsh -c` would end with 143. A trap that does no more keeps that, and says so (T) for the
# result to tell. A TRAPTERM function of the user's files is theirs, and kept (a `trap ... TERM`
# string is not looked for: that would cost a fork at every start).
if (( ! ${+functions[TRAPTERM]} )); then
    builtin trap '__sr_mark T' TERM
fi

# Typed by safe-run right before the command: C marks where its output begins, and carries the
# last process id given out then: what the shell started before it (its preexec hooks') is not the command's.
# It first removes the alias `__sr_c` the line-finish hook made for this line (see below), and
# returns the status it was called with, so that the command's `$?` is the last command's, as at
# a prompt. The line calls it, and `__sr_line_end`, in `&&` lists (`__sr_start && builtin :`),
# which neither ERR_EXIT nor the ZERR trap looks at: what safe-run adds to a line fails nowhere a
# prompt would not (a command whose last list failed where ERR_EXIT lets it pass, `[[ -f x ]] &&
# cat x`, would end the shell at the line's end).
__sr_start() {
    builtin local __sr_status=$?
    if [[ -n $__sr_aliased ]]; then
        __sr_aliased=
        builtin unalias __sr_c
    fi
    if [[ -n $__sr_comments ]]; then
        builtin setopt "$__sr_comments"
        __sr_comments=
    fi
    __sr_running=1
    __sr_start_pid=$(<"$__sr_pid_file")
    __sr_mark "C;$__sr_start_pid"
    builtin return $__sr_status
}

# The end of every typed line (see `posix.LINE_END`): the line's status and the last process id
# given out then, recorded, then D; `$?` stays the line's. The id is read without starting a
# process: zsh's `read` takes a byte at a time, which a /proc/sys file does not serve, and its
# `$(<file)` reads the file itself.
__sr_line_end() {
    builtin local __sr_line_status=$? __sr_last_pid=
    __sr_running=
    __sr_last_pid=$(<"$__sr_pid_file")
    builtin echo "$__sr_line_status $__sr_last_pid" >>"$__sr_status_file"
    __sr_mark "D;$__sr_line_status"
    builtin return $__sr_line_status
}

# The line typed for each command is ` __sr_c`: the line editor reads what is typed one byte at a
# time, and a plugin such as zsh-syntax-highlighting redraws the whole line at each, so the line is
# kept short. It runs C, the command, and the line's own end (`__sr_line_end`). Run through
# `eval`, the command's pipelines would sit inside eval's own, which holds job number 1 while it
# runs, so its first background job would be %2 and `kill %1` would miss it. So when the run line
# is accepted, before zsh reads it, a line-finish hook makes `__sr_c` an alias of all three, the
# command's text on lines of its own (its newline ends a trailing comment there): the command's
# pipelines are the line's own. Its `__sr_start` removes the alias first thing, so it never runs a
# command twice. Comments in it count, as they do in eval's text, for the reading of this line
# only: the option is put back before the command runs. Without the hook (no ZLE, an old zsh, aliases off),
# `__sr_c` is this function, and it runs the command through eval.
__sr_c() {
    __sr_start && builtin :
    builtin eval "$(<$__sr_cmd)"
    __sr_line_end && builtin :
}

typeset -g __sr_comments= __sr_aliased=

__sr_line_finish() {
    if [[ $BUFFER == ' __sr_c' ]]; then
        builtin alias __sr_c="__sr_start && builtin :"$'\n'"$(<$__sr_cmd)"$'\n'"__sr_line_end && builtin :"
        __sr_aliased=1
        [[ -o INTERACTIVE_COMMENTS ]] && __sr_comments=INTERACTIVE_COMMENTS || __sr_comments=NO_INTERACTIVE_COMMENTS
        builtin setopt INTERACTIVE_COMMENTS
    fi
}

if builtin autoload -Uz add-zle-hook-widget 2>/dev/null; then
    add-zle-hook-widget -d line-finish __sr_line_finish 2>/dev/null
    add-zle-hook-widget line-finish __sr_line_finish 2>/dev/null
fi

# The typed line sends D at its own end (`__sr_line_end`). A line the shell abandoned before
# its end (Ctrl-C, an error that aborts it) has not: the first precmd hook, with `$?` still the
# line's status, records it and sends D in its place.
__sr_set_status() {
    builtin return $1
}

# A precmd hook of ours returns the status it was called with; under ERR_EXIT it returns 0, since
# a hook that fails then ends the shell, at a terminal too.
__sr_precmd() {
    builtin local __sr_status=$?
    if [[ -n $__sr_running ]]; then
        __sr_set_status $__sr_status && builtin :
        __sr_line_end && builtin :
    fi
    [[ -o ERR_EXIT ]] || builtin return $__sr_status
}

typeset -g __sr_prompt_start=$'%{\033]633;A;'"$__sr_nonce"$'\007%}'
typeset -g __sr_prompt_end=$'%{\033]633;B;'"$__sr_nonce"$'\007%}'

# Last precmd hook: themes that rebuild PS1 at every prompt lose the marks, so put them back.
__sr_wrap_ps1() {
    builtin local __sr_status=$?
    if [[ ${PS1-} != *"$__sr_prompt_end"* ]]; then
        PS1="$__sr_prompt_start${PS1-}$__sr_prompt_end"
    fi
    [[ -o ERR_EXIT ]] || builtin return $__sr_status
}

# PROMPT_SP draws its end-of-line mark before precmd runs, inside the command's output.
builtin setopt PROMPT_PERCENT NO_PROMPT_SP
typeset -ga precmd_functions
precmd_functions=(__sr_precmd ${precmd_functions[@]:#__sr_(precmd|wrap_ps1)} __sr_wrap_ps1)
