"""Where install and uninstall read, write and remove a host's config files: never through a link.

A project folder is anyone's to write (a cloned repository): a link planted at a config, at its backup
or in place of one of its folders could send a write to the user's shell start-up file, or read a file
of theirs into the project. So below the folder the user chose (the project, or the folder of a
user-level config) nothing is followed: each folder and file is opened without following a link,
relative to its parent's descriptor, and a link is refused (files.LinkRefused). A file is replaced by
a new private file renamed into place; a new file is 0600, an existing one keeps its mode.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import files


@dataclass(frozen=True)
class Place:
    """A config file: the folder the user chose, the folders below it (never followed) and its name."""

    root: Path
    parts: tuple[str, ...]
    name: str

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.parts, self.name)

    def beside(self, suffix: str) -> Place:
        """The file of the same folder whose name is this one's with `suffix` (a backup)."""
        return Place(self.root, self.parts, self.name + suffix)


def place(path: Path, project: Path | None) -> Place:
    """The place of a config file: below `project` when it is there, else in its own folder.

    A path may name the project through a link above it (installed as ~/src/app, ~/src a link to
    /data/src) while a host names its working directory resolved (/data/src/app): the deepest folder of
    the path that is no link and resolves to the project counts as the project."""
    root = None if project is None else _project_in(path, project)
    if root is not None:
        relative = path.relative_to(root).parts
        return Place(root, relative[:-1], relative[-1])
    return Place(path.parent, (), path.name)


def _project_in(path: Path, project: Path) -> Path | None:
    """The folder of `path` that is `project` (as written, else resolved); None when none is."""
    if path.is_relative_to(project):
        return project
    real = os.path.realpath(project)
    for folder in path.parents:
        with contextlib.suppress(OSError):
            if not stat.S_ISLNK(os.lstat(folder).st_mode) and os.path.realpath(folder) == real:
                return folder
    return None


@contextlib.contextmanager
def _folder(where: Place, create: bool) -> Iterator[int | None]:
    """The descriptor of the file's folder (None: it does not exist and create is False)."""
    if create:
        files.private_dirs(where.root)
    try:
        fd = files.open_folder(where.root, where.parts, create=create)
    except FileNotFoundError:
        if create:
            raise
        fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def read(where: Place) -> bytes | None:
    """The file's bytes; None when it (or its folder) does not exist. Raises OSError (LinkRefused)."""
    with _folder(where, create=False) as folder:
        return None if folder is None else files.read_at(folder, where.name, where.path)


def check(where: Place) -> None:
    """Raise LinkRefused when the file's folders or the file itself is a link (nothing is opened)."""
    with _folder(where, create=False) as folder:
        if folder is not None:
            try:
                info = os.stat(where.name, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                return
            if stat.S_ISLNK(info.st_mode):
                raise files.LinkRefused(where.path)


def create(where: Place, data: bytes) -> bool:
    """Create the file (0600) holding `data`; False when one is there already. Raises OSError."""
    with _folder(where, create=True) as folder:
        assert folder is not None
        return files.create_at(folder, where.name, data, where.path)


def write(where: Place, data: bytes) -> None:
    """Replace the file with `data` (its folders made 0700 when missing). Raises OSError."""
    with _folder(where, create=True) as folder:
        assert folder is not None
        try:
            info = os.stat(where.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            mode = files.FILE_MODE
        else:
            if stat.S_ISLNK(info.st_mode):
                raise files.LinkRefused(where.path)
            mode = stat.S_IMODE(info.st_mode)
        files.replace_at(folder, where.name, data, mode)


def remove(where: Place) -> None:
    """Remove the file (the link itself, were it one: nothing behind it). Raises OSError."""
    with _folder(where, create=False) as folder:
        if folder is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(where.name, dir_fd=folder)
