# safe-run integration for bash, loaded with `bash --init-file` after startup.bash.
# The header at the top of this file, written by safe-run, defines:
#   __sr_nonce         the per-run secret that every mark carries
#   __sr_command_file  the file holding the command text
#   __sr_cwd           the directory the command runs in
#   __sr_load_rc       1 to load the user's rc files, 0 for --no-rc
#   __sr_apply_env     a function exporting the caller's --env values
# Everything here must work under `set -u` and must not disturb `$?`.

# The rc files may have changed these; the caller's choices win.
__sr_apply_env
builtin cd -- "$__sr_cwd" || builtin exit 125

# Marks go to the terminal itself, so that a command that sends the shell's output elsewhere
# (`exec >build.log 2>&1`) neither loses them nor finds the nonce in its file.
__sr_mark() {
    { builtin printf '\033]633;%s;%s\007' "$1" "$__sr_nonce" >/dev/tty; } 2>/dev/null ||
        builtin printf '\033]633;%s;%s\007' "$1" "$__sr_nonce"
}

__sr_running=

# `exit` in an interactive bash prints the word "exit" on stderr before the shell goes: the
# shell's word, not the command's. The EXIT trap runs right after it and sends X, so safe-run
# takes exactly that word back out of the end of the output. The other ways out that run the
# trap print no word: errexit (so no X while `set -e` is on) and a fatal signal (then $? is
# 128 or more; an `exit 128` or higher keeps its word). An EXIT trap from the user's files still
# runs, after ours; one the command sets replaces ours, and then the word stays.
__sr_exit_trap=
__sr_read_exit_trap() {
    builtin eval "builtin set -- $(builtin trap -p EXIT)"
    __sr_exit_trap=${3-}
}
__sr_read_exit_trap
__sr_on_exit() {
    builtin local __sr_status=$?
    if [[ $- != *e* && $__sr_status -lt 128 ]]; then
        __sr_mark X
    fi
    builtin return "$__sr_status"
}
builtin trap '__sr_on_exit; builtin eval -- "$__sr_exit_trap"' EXIT

# Typed by safe-run right before the command: C marks where its output begins.
__sr_start() {
    __sr_running=1
    __sr_mark C
}

# First in PROMPT_COMMAND, so `$?` is still the command's status.
__sr_precmd() {
    builtin local __sr_status=$?
    if [ -n "$__sr_running" ]; then
        __sr_running=
        __sr_mark "D;$__sr_status"
    fi
    builtin return "$__sr_status"
}

__sr_prompt_start=$'\[\033]633;A;'"$__sr_nonce"$'\007\]'
__sr_prompt_end=$'\[\033]633;B;'"$__sr_nonce"$'\007\]'

# Last in PROMPT_COMMAND: themes that rebuild PS1 at every prompt lose the marks, so put them back.
__sr_wrap_ps1() {
    builtin local __sr_status=$?
    case "${PS1-}" in
        *"$__sr_prompt_end"*) ;;
        *) PS1="$__sr_prompt_start${PS1-}$__sr_prompt_end" ;;
    esac
    builtin return "$__sr_status"
}

if [[ -v PROMPT_COMMAND && "${PROMPT_COMMAND@a}" == *a* ]]; then
    PROMPT_COMMAND=(__sr_precmd "${PROMPT_COMMAND[@]}" __sr_wrap_ps1)
elif [ -n "${PROMPT_COMMAND-}" ]; then
    PROMPT_COMMAND="__sr_precmd"$'\n'"$PROMPT_COMMAND"$'\n'"__sr_wrap_ps1"
else
    PROMPT_COMMAND="__sr_precmd"$'\n'"__sr_wrap_ps1"
fi
