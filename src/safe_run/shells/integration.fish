# safe-run integration for fish, sourced by `fish --init-command` after the user's config.
# The header written above this line by safe-run defines:
#   __sr_nonce         the per-run secret that every mark carries
#   __sr_command_file  the file holding the command text
#   __sr_cwd           the directory the command runs in
#   __sr_apply_env     a function exporting the caller's --env values

# The config files may have changed these; the caller's choices win.
__sr_apply_env
builtin cd -- $__sr_cwd; or exit 125

# Marks go to the terminal itself, so that a command that sends the shell's output elsewhere
# neither loses them nor finds the nonce in its file.
function __sr_mark --argument-names payload
    builtin printf '\e]633;%s;%s\a' $payload $__sr_nonce 2>/dev/null >/dev/tty
    or builtin printf '\e]633;%s;%s\a' $payload $__sr_nonce
end

set -g __sr_running

# Typed by safe-run right before the command: C marks where its output begins.
function __sr_start
    set -g __sr_running 1
    __sr_mark C
end

function __sr_postexec --on-event fish_postexec
    set -l __sr_status $status
    if test -n "$__sr_running"
        set -g __sr_running
        __sr_mark "D;$__sr_status"
    end
end

function __sr_return --argument-names code
    return $code
end

# Wrap the user's prompt so each prompt is framed by A and B, keeping `$status` for it.
if functions -q fish_prompt
    functions -c fish_prompt __sr_user_prompt
else
    function __sr_user_prompt
    end
end
function fish_prompt
    set -l __sr_status $status
    __sr_mark A
    __sr_return $__sr_status
    __sr_user_prompt
    __sr_mark B
end
