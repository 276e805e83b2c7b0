"""Install the man page and the shell completions in editable installs too.

pyproject.toml lists them as data files, which a wheel installs under `share/` of its prefix.
setuptools leaves data files out of editable installs, and pip removes an earlier install's files
when it installs the editable one, so `pip install .` followed by `pip install -e '.[test]'` (the
README's two commands) would leave no `man safe-run` and no completions. In editable mode (the
flag setuptools sets on build steps that have it) this step installs them into the wheel as a
regular build does.
"""

from __future__ import annotations

from setuptools import Command, setup
from setuptools.command.build import build


class InstallDataWhenEditable(Command):
    description = "install the data files (man page, completions) in an editable install"
    user_options: list[tuple[str, str | None, str]] = []

    def initialize_options(self) -> None:
        self.editable_mode = False

    def finalize_options(self) -> None:
        pass

    def run(self) -> None:
        if self.editable_mode and self.distribution.has_data_files():
            self.run_command("install_data")


class Build(build):
    sub_commands = [*build.sub_commands, ("install_data_when_editable", None)]


setup(cmdclass={"build": Build, "install_data_when_editable": InstallDataWhenEditable})
