# safe-run: bash's start-up as `bash -i` does it, and the run kept out of the user's history.
# Loaded with `bash --init-file`, with or without the integration after it. The header written
# above this line by safe-run defines __sr_load_rc: 1 to load the user's rc files, 0 for --no-rc.

if [ "$__sr_load_rc" = 1 ]; then
    # --init-file replaces the usual start-up files, so load them as bash would.
    if [ -r /etc/bash.bashrc ]; then . /etc/bash.bashrc; fi
    if [ -r ~/.bashrc ]; then . ~/.bashrc; fi
fi
# One command in a throw-away shell: nothing typed into it goes into the user's history, and no
# history file is written when it ends.
builtin set +o history
builtin unset HISTFILE
