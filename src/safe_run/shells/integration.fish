# safe-run integration for fish: sourced by `fish --init-command` after the user's config, and
# again into a live shell whose hooks a command removed (so every step here may find its own
# earlier self, and must leave one copy). The header written above it by safe-run defines:
#   __sr_nonce         the per-run secret that every mark carries
#   __sr_cmd           the file holding the command text

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
    set -g __sr_line_status
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

# Wrap the user's prompt so each prompt is framed by A and B, keeping `$status` for it (a prompt
# already wrapped by an earlier load keeps the user's one it wraps).
if functions -q fish_prompt; and not functions fish_prompt | string match -q '*__sr_mark B*'
    functions -e __sr_user_prompt
    functions -c fish_prompt __sr_user_prompt
else if not functions -q __sr_user_prompt
    function __sr_user_prompt
    end
end
function fish_prompt
    set -l __sr_status $status
    if test -n "$__sr_running"
        # fish also asks for its prompt, without drawing it, while the typed line still runs
        # (a job's report during `wait`): that is no prompt of the shell's, and gets no marks.
        if test -z "$__sr_line_status"
            __sr_return $__sr_status
            __sr_user_prompt
            return
        end
        # A background job that ended during the command makes fish draw its prompt before it
        # fires fish_postexec, and with the job's report's status: the status the typed line
        # left at its end then ends the command here, and the late postexec finds nothing to do.
        set -g __sr_running
        __sr_mark "D;$__sr_line_status"
    end
    __sr_mark A
    __sr_return $__sr_status
    __sr_user_prompt
    __sr_mark B
end
