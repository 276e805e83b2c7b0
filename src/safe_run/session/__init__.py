"""Sessions: a command that outlives the call that started it, held by a detached process.

`store` is where sessions live on disk, `holder` the process that owns a session's terminal,
`wire` how callers and holders talk, `client` the caller's side, `keys` what `send --key` types.
"""
