# safe-run integration for zsh: becomes $ZDOTDIR/.zshenv in a private directory.
# The header written above this line by safe-run defines:
#   __sr_nonce, __sr_cmd, __sr_cwd, __sr_load_rc, __sr_apply_env (see integration.zsh)
#   __sr_user_zdotdir  the user's ZDOTDIR, when they had one
#   __sr_had_zdotdir   1 when the user had ZDOTDIR set, so it is restored rather than removed
# zsh reads each start-up file from $ZDOTDIR, so the user's .zshenv runs with ZDOTDIR as plain
# `zsh -i` would have it (set or unset); ZDOTDIR points back at ours afterwards, until .zshrc
# hands the user's back for good. A .zshenv may set ZDOTDIR itself (the usual way to keep the
# other files in ~/.config/zsh): what it leaves, value and export, is what the rest uses.

__sr_zdotdir=$ZDOTDIR
if [[ $__sr_load_rc == 1 ]]; then
    if [[ $__sr_had_zdotdir == 1 ]]; then
        ZDOTDIR=$__sr_user_zdotdir
    else
        builtin unset ZDOTDIR
    fi
    [[ -r ${ZDOTDIR:-$HOME}/.zshenv ]] && builtin source ${ZDOTDIR:-$HOME}/.zshenv
    if (( ${+ZDOTDIR} )); then
        __sr_had_zdotdir=1
        __sr_user_zdotdir=$ZDOTDIR
        [[ ${(t)ZDOTDIR} == *export* ]] && __sr_export_zdotdir=1 || __sr_export_zdotdir=0
    else
        __sr_had_zdotdir=0
    fi
else
    builtin unsetopt GLOBAL_RCS
fi
ZDOTDIR=$__sr_zdotdir
