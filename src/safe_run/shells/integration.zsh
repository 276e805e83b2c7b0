# safe-run integration for zsh: the rest of $ZDOTDIR/.zshrc in a private directory, after
# startup.zsh, and sourced again into a live shell whose hooks a command removed (so every step
# here may find its own earlier self, and must leave one copy). The header defines:
#   __sr_nonce         the per-run secret that every mark carries
#   __sr_command_file  the file holding the command text
# Everything here must work under `set -u` (NO_UNSET) and must not disturb `$?`.

# Marks go to the terminal itself, so that a command that sends the shell's output elsewhere
# (`exec >build.log 2>&1`) neither loses them nor finds the nonce in its file.
__sr_mark() {
    { builtin printf '\033]633;%s;%s\007' "$1" "$__sr_nonce" >/dev/tty; } 2>/dev/null ||
        builtin printf '\033]633;%s;%s\007' "$1" "$__sr_nonce"
}

typeset -g __sr_running=

# Typed by safe-run right before the command: C marks where its output begins.
__sr_start() {
    __sr_running=1
    __sr_mark C
}

# First precmd hook, so `$?` is still the command's status.
__sr_precmd() {
    builtin local __sr_status=$?
    if [[ -n $__sr_running ]]; then
        __sr_running=
        __sr_mark "D;$__sr_status"
    fi
    builtin return $__sr_status
}

typeset -g __sr_prompt_start=$'%{\033]633;A;'"$__sr_nonce"$'\007%}'
typeset -g __sr_prompt_end=$'%{\033]633;B;'"$__sr_nonce"$'\007%}'

# Last precmd hook: themes that rebuild PS1 at every prompt lose the marks, so put them back.
__sr_wrap_ps1() {
    builtin local __sr_status=$?
    if [[ ${PS1-} != *"$__sr_prompt_end"* ]]; then
        PS1="$__sr_prompt_start${PS1-}$__sr_prompt_end"
    fi
    builtin return $__sr_status
}

# PROMPT_SP draws its end-of-line mark before precmd runs, inside the command's output.
builtin setopt PROMPT_PERCENT NO_PROMPT_SP
typeset -ga precmd_functions
precmd_functions=(__sr_precmd ${precmd_functions[@]:#__sr_(precmd|wrap_ps1)} __sr_wrap_ps1)
