# safe-run integration for fish: sourced by `fish --init-command` after the user's config, and
# again into a live shell whose hooks a command removed (so every step here may find its own
# earlier self, and must leave one copy). The header written above it by safe-run defines:
#   __sr_nonce         the per-run secret that every mark carries
#   __sr_cmd           the file holding the command text
#   __sr_status_file   where each typed line records its end (see `__sr_line_end`)

# Marks go to the terminal itself, so that a command that sends the shell's output elsewhere
# neither loses them nor finds the nonce in its file.
function __sr_mark --argument-names payload
    builtin printf '\e]633;%s;%s\a' $payload $__sr_nonce 2>/dev/null >/dev/tty
    or builtin printf '\e]633;%s;%s\a' $payload $__sr_nonce
end

set -g __sr_running

# Typed by safe-run right before the command: C marks where its output begins, and carries the
# last process id given out then: what the shell started before it (its preexec hooks') is not the command's.
# It reads the command into __sr_text and returns the status it was called with, so that the
# command's `$status` is the last command's, as at a prompt (a command substitution in eval's
# words would make it 0).
function __sr_start
    set -l __sr_status $status
    set -g __sr_running 1
    set -g __sr_start_pid
    test -r /proc/sys/kernel/ns_last_pid; and builtin read -g __sr_start_pid </proc/sys/kernel/ns_last_pid
    set -g __sr_text (string collect < $__sr_cmd)
    __sr_mark "C;$__sr_start_pid"
    return $__sr_status
end

# The end of every typed line, before any event handler (see `posix.LINE_END`): the line's status
# and the last process id given out then, recorded, then D; `$status` stays the line's.
function __sr_line_end
    set -l __sr_line_status $status
    set -g __sr_running
    set -l __sr_last_pid
    test -r /proc/sys/kernel/ns_last_pid; and builtin read -l __sr_last_pid </proc/sys/kernel/ns_last_pid
    builtin echo $__sr_line_status $__sr_last_pid >>$__sr_status_file
    __sr_mark "D;$__sr_line_status"
    return $__sr_line_status
end

# The typed line sends D at its own end. A line fish abandoned before its end (Ctrl-C) has not:
# postexec, with `$status` still the line's, records it and sends D in its place.
function __sr_postexec --on-event fish_postexec
    set -l __sr_status $status
    if test -n "$__sr_running"
        __sr_return $__sr_status
        __sr_line_end
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
        __sr_return $__sr_status
        __sr_user_prompt
        return
    end
    __sr_mark A
    __sr_return $__sr_status
    __sr_user_prompt
    __sr_mark B
end
