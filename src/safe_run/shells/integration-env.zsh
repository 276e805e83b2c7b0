# safe-run integration for zsh: becomes $ZDOTDIR/.zshenv in a private directory.
# The header written above this line by safe-run defines:
#   __sr_nonce, __sr_command_file, __sr_cwd, __sr_load_rc, __sr_apply_env (see integration.zsh)
#   __sr_user_zdotdir  where the user's own start-up files live ($ZDOTDIR or $HOME)
#   __sr_had_zdotdir   1 when the user had ZDOTDIR set, so it is restored rather than removed
# zsh reads each start-up file from $ZDOTDIR, so point it at the user's directory while their
# file runs and back at ours afterwards, until .zshrc hands it back for good.

__sr_zdotdir=$ZDOTDIR
if [[ $__sr_load_rc == 1 ]]; then
    ZDOTDIR=$__sr_user_zdotdir
    [[ -r $ZDOTDIR/.zshenv ]] && builtin source $ZDOTDIR/.zshenv
    __sr_user_zdotdir=$ZDOTDIR
else
    builtin unsetopt GLOBAL_RCS
fi
ZDOTDIR=$__sr_zdotdir
