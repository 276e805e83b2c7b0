# safe-run: the user's .zshrc loaded as plain `zsh -i` loads it, and the run kept out of the
# user's history. The head of the private .zshrc, with or without the integration after it.
# integration-env.zsh (the private .zshenv) has set __sr_load_rc, __sr_had_zdotdir,
# __sr_user_zdotdir and __sr_export_zdotdir.

if [[ $__sr_had_zdotdir == 1 ]]; then
    ZDOTDIR=$__sr_user_zdotdir
    if [[ ${__sr_export_zdotdir-1} == 1 ]]; then builtin export ZDOTDIR; else builtin typeset +x ZDOTDIR; fi
else
    builtin unset ZDOTDIR
fi
if [[ $__sr_load_rc == 1 ]]; then
    [[ -r ${ZDOTDIR:-$HOME}/.zshrc ]] && builtin source ${ZDOTDIR:-$HOME}/.zshrc
fi
# One command in a throw-away shell: nothing typed into it goes into the user's history, and no
# history file is written when it ends.
builtin unset HISTFILE
