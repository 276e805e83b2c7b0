"""An ordinary user made for one test run, as root, and removed after it: a password, a sudoers
entry, a home in a temporary directory, and a way to run safe-run as that user.

setuid programs (sudo, su, passwd) ask an ordinary user for a password and hide themselves from
that user's view of /proc; root meets neither. Used by the tests and by bench/bench_secret_prompts.py.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SUDOERS_DIR = Path("/etc/sudoers.d")
# What sudo keeps per user: removed with the user.
SUDO_STATE = (Path("/var/lib/sudo/lectured"), Path("/var/lib/sudo/ts"), Path("/run/sudo/ts"))


class Unavailable(Exception):
    """The machine cannot make such a user here; the reason is the test's skip message."""


def reachable_by_others(path: str) -> bool:
    """Whether a user with no rights of its own can read and run or list `path` (every directory
    above it searchable)."""
    real = Path(os.path.realpath(path))
    return all(parent.stat().st_mode & 0o001 for parent in real.parents) and real.stat().st_mode & 0o005 == 0o005


def interpreter() -> tuple[str, dict[str, str]]:
    """This Python, or the system's of the same version with this one's packages on its path, for
    another user to run safe-run with (a venv's Python under /root is not theirs to run)."""
    import safe_run

    packages = [str(Path(safe_run.__file__).parent.parent), sysconfig.get_paths()["purelib"],
                sysconfig.get_paths()["platlib"]]
    if not all(reachable_by_others(path) for path in packages):
        raise Unavailable("this checkout or its packages are not readable by other users")
    if reachable_by_others(sys.executable):
        return sys.executable, {"PYTHONPATH": os.pathsep.join(packages)}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None or not reachable_by_others(system):
        raise Unavailable(f"no {version} that another user may run")
    return system, {"PYTHONPATH": os.pathsep.join(packages)}


@dataclass
class User:
    name: str
    password: str
    home: Path
    python: str
    env: dict[str, str] = field(default_factory=dict)

    def argv(self, *args: str, **extra: str) -> list[str]:
        """`safe-run ARGS` as this user, in their home, on the terminal it is started on; `extra`
        variables beside their own."""
        env = [f"{key}={value}" for key, value in {**self.env, **extra}.items()]
        return ["runuser", "-u", self.name, "--", "env", "-i", *env, self.python, "-m", "safe_run", *args]

    def shell_argv(self) -> list[str]:
        """This user's own interactive bash, whose history is kept in their home."""
        env = [f"{key}={value}" for key, value in self.env.items()]
        return ["runuser", "-u", self.name, "--", "env", "-i", *env, f"HISTFILE={self.home}/.bash_history",
                "bash", "--norc", "--noprofile", "-i"]

    def run(self, *args: str, timeout: float = 60, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args, **extra), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, cwd=self.home)


class Users:
    """Makes users and removes them, with everything of theirs, however the run ends."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            raise Unavailable("needs root, to make a throwaway user with a password and a sudoers entry")
        for program in ("useradd", "userdel", "chpasswd", "runuser"):
            if shutil.which(program) is None:
                raise Unavailable(f"{program} is not installed")
        self.python, self.python_env = interpreter()
        self._base = Path(tempfile.mkdtemp(prefix="safe-run-users-"))
        self._base.chmod(0o755)
        self._made: list[str] = []

    def make(self, sudoer: bool = False) -> User:
        name = f"sr{os.getpid() % 100000}x{len(self._made)}"
        password = f"Pw-{os.urandom(6).hex()}-Lake-{len(self._made)}"
        home = self._base / name
        subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash", name],
                       check=True, capture_output=True)
        self._made.append(name)
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, capture_output=True)
        if sudoer:
            self._sudoer(name)
        env = {"HOME": str(home), "USER": name, "LOGNAME": name, "SHELL": "/bin/bash", "LANG": "C.UTF-8",
               "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "xterm-256color", "SAFE_RUN_WARM": "0",
               **self.python_env}
        return User(name, password, home, self.python, env)

    def _sudoer(self, name: str) -> None:
        if shutil.which("sudo") is None:
            raise Unavailable("sudo is not installed (.ci/run installs it)")
        entry = SUDOERS_DIR / name
        entry.write_text(f"Defaults:{name} lecture=never, timestamp_timeout=0\n{name} ALL=(ALL) ALL\n")
        entry.chmod(0o440)

    def remove(self) -> None:
        for name in self._made:
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", "--remove", "--force", name], capture_output=True)
            (SUDOERS_DIR / name).unlink(missing_ok=True)
            for place in SUDO_STATE:
                target = place / name
                if target.is_dir():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)
            try:
                pwd.getpwnam(name)
            except KeyError:
                continue
            raise RuntimeError(f"the throwaway user {name} could not be removed")
        self._made.clear()
        shutil.rmtree(self._base, ignore_errors=True)
