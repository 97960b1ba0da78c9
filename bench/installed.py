"""The package as `pip install memlikehuman` puts it, from this checkout or from a git revision.

A wheel is built and installed into a scratch venv whose dependencies come from this venv through a
.pth line (no download), so its console script starts as a user's does, without the editable
install's path finder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def this_checkout(tmp: Path) -> Path:
    """A copy of the package as this checkout has it (committed or not), ready to build."""
    src = tmp / "src"
    shutil.copytree(ROOT / "memlikehuman", src / "memlikehuman", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)
    return src


def at_revision(rev: str, tmp: Path) -> tuple[Path, str]:
    """The package as git revision `rev` has it, ready to build, and the revision's short name."""
    commit = subprocess.run(["git", "rev-parse", "--short", rev], capture_output=True, text=True, check=True, cwd=ROOT)
    src = tmp / "src"
    src.mkdir(parents=True)
    files = ["memlikehuman", "pyproject.toml", "README.md"]
    tar = subprocess.run(["git", "archive", rev, *files], capture_output=True, check=True, cwd=ROOT).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=tar, check=True)
    return src, commit.stdout.strip()


def pip_installed(src: Path, tmp: Path) -> Path:
    """The package at src as `pip install` puts it (a wheel, its .pyc compiled) into a scratch venv; its python."""
    tmp.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(tmp / "wheel"), str(src)], check=True)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    wheel = next((tmp / "wheel").glob("memlikehuman-*.whl"))
    # Without PYTHONPATH: a checkout on it is a package pip takes as installed, and installs nothing.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", str(wheel)], check=True, env=env)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The dependencies (apsw, ...) from this venv, after the scratch venv's own site-packages: no download.
    Path(site, "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def both_installed(rev: str, root: Path) -> tuple[str, str, str]:
    """The `memlikehuman` console scripts of revision `rev` and of this checkout, each pip-installed under
    root; with the revision's short name: (rev's script, its name, this checkout's script)."""
    src, name = at_revision(rev, root / "baseline")
    baseline = pip_installed(src, root / "baseline" / "installed").with_name("memlikehuman")
    this = pip_installed(this_checkout(root / "this"), root / "this" / "installed").with_name("memlikehuman")
    return str(baseline), name, str(this)
