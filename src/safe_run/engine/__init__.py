"""The engine: one run of a command in a shell's terminal (`runner.Run`), the loop that drives it, and
what it reads and writes: the terminal, the kernel, signals, files, clocks."""
