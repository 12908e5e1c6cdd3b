"""The knowledge base (entries/ at the repository root) ships inside the wheel as
rankdoctor/_entries, where rankdoctor.kb.cache.default_entries_dir() looks for it when no
checkout is around. Everything else about the package is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithEntries(build_py):
    def run(self):
        super().run()
        src = ROOT / "entries"
        if src.is_dir():
            dest = Path(self.build_lib) / "rankdoctor" / "_entries"
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))


setup(cmdclass={"build_py": BuildWithEntries})
