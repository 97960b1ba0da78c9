"""Files and directories that only their owner can read: everything memlikehuman writes on disk.

The archive holds the user's own words, and so do its WAL, its side files and its exports: under the
usual umask 022 they would be readable by every local user. Every file made here is 0600 and every
directory 0700, whatever the umask; `restrict_umask` makes the same hold for files that SQLite or a
library creates in a command's process. In a folder someone else may control (a project), `open_folder`
and the `*_at` helpers open each folder and file without following a link (LinkRefused), and
`open_to_others` says why a directory is not private enough for an archive. The hooks import this
module: os, stat and errno only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

FILE_MODE = 0o600
DIR_MODE = 0o700
OTHERS = 0o077  # the group and other permission bits


def restrict_umask() -> None:
    """Make every file and directory this process creates owner-only (set once, at a command's start)."""
    os.umask(OTHERS)


def private_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents, each 0700; existing ones are left as they are.

    Raises OSError."""
    missing = []
    for path in (directory, *directory.parents):
        if path.is_dir():
            break
        missing.append(path)
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            os.mkdir(path, DIR_MODE)
        os.chmod(path, DIR_MODE)  # mkdir's mode passes through the umask


def create_private(path: Path) -> bool:
    """Create an empty 0600 file if `path` does not exist; True when this call created it. Raises OSError."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)  # os.open's mode passes through the umask
    finally:
        os.close(fd)
    return True


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) by an atomic rename of a 0600 file beside it. Raises OSError."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        replace_at(folder, path.name, text.encode("utf-8"))
    finally:
        os.close(folder)


def append_private(path: Path, line: str) -> None:
    """Append one line to `path`, creating it 0600. Raises OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        if os.fstat(out.fileno()).st_mode & OTHERS:
            os.fchmod(out.fileno(), FILE_MODE)
        out.write(line)


class LinkRefused(OSError):
    """A symbolic link where a file or folder of ours was to be read, written or removed: never followed."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.ELOOP, "is a symbolic link", str(path))
        self.path = path


_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_folder(root: Path, parts: tuple[str, ...] = (), *, create: bool = False) -> int:
    """A descriptor of the folder root/parts (close it). `root` is opened as given (the caller chose it);
    each of `parts` is opened without following a link (LinkRefused) and, with `create`, made 0700 when
    missing. Raises OSError (FileNotFoundError for a missing part without `create`)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = root
    try:
        for part in parts:
            where = where / part
            made = False
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                    made = True
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError:
                if _is_link(fd, part):
                    raise LinkRefused(where) from None
                raise
            os.close(fd)
            fd = child
            if made:
                os.fchmod(fd, DIR_MODE)  # mkdir's mode passes through the umask
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(folder: int, name: str, where: Path) -> bytes | None:
    """The bytes of the regular file `name` in `folder` (None: there is none), opened without following a
    link (LinkRefused) or waiting on a FIFO. `where` names it in errors. Raises OSError."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError:
        if _is_link(folder, name):
            raise LinkRefused(where) from None
        raise
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "is not a regular file", str(where))
        return stream.read()


def create_at(folder: int, name: str, data: bytes, where: Path) -> bool:
    """Create the 0600 file `name` in `folder` holding `data`; False when something is there already (a
    link: LinkRefused). `where` names it in errors. Raises OSError."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, FILE_MODE, dir_fd=folder)
    except FileExistsError:
        if _is_link(folder, name):
            raise LinkRefused(where) from None
        return False
    _fill(fd, data, FILE_MODE)
    return True


def replace_at(folder: int, name: str, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace `name` in `folder` with `data` (mode `mode`) by an atomic rename of a new private file beside
    it: a link at `name` is replaced, never followed. Raises OSError.

    The temporary name is new (O_EXCL, random), so nothing planted under it is opened or removed."""
    while True:
        tmp = f".{name}.{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, FILE_MODE, dir_fd=folder)
            break
        except FileExistsError:
            continue
    try:
        _fill(fd, data, mode)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


def _fill(fd: int, data: bytes, mode: int) -> None:
    """Give the new file `fd` its mode (os.open's passes through the umask) and its bytes; close it."""
    with os.fdopen(fd, "wb") as out:
        os.fchmod(fd, mode)
        out.write(data)


def owned_by_another(paths: list[Path]) -> Path | None:
    """The first of `paths` that exists and belongs to another user."""
    for path in paths:
        try:
            if os.lstat(path).st_uid != os.getuid():
                return path
        except OSError:
            continue
    return None


def open_to_others(directory: Path) -> str | None:
    """Why another user could delete, rename or replace files in `directory` (None: no one but this user
    and root can): it belongs to another user, or others may write it (a group counts unless it is this
    user's own group, of one member). A sticky directory of this user's is private enough: others may
    add names there, never remove or rename ours. Raises OSError."""
    info = os.stat(directory)
    if info.st_uid not in (os.getuid(), 0):
        return f"belongs to another user (uid {info.st_uid}), who can delete or replace its files"
    mode = stat.S_IMODE(info.st_mode)
    if mode & stat.S_ISVTX and info.st_uid == os.getuid():
        return None
    if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and not _own_group(info.st_gid)):
        return f"can be written by other users (mode {mode:04o}), who can delete or replace its files"
    return None


def _own_group(gid: int) -> bool:
    """Whether `gid` is this user's own group: their primary group, named as they are, no other member."""
    import grp
    import pwd

    try:
        user, group = pwd.getpwuid(os.getuid()), grp.getgrgid(gid)
    except KeyError:
        return False
    return gid == user.pw_gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}


def tighten(paths: list[Path], stderr: TextIO | None = None) -> list[Path]:
    """Remove the group and other bits of those `paths` that exist, are ours and have any; return them.

    One line on stderr names what was tightened (an archive made by an older version, or under a
    permissive umask by another program). A file of another user is left alone."""
    changed = []
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid() or not info.st_mode & OTHERS:
            continue
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~OTHERS)
            changed.append(path)
    if changed:
        names = ", ".join(str(path) for path in changed)
        with contextlib.suppress(OSError, ValueError):
            (stderr or sys.stderr).write(
                f"memlikehuman: made owner-only (other local users could read them): {names}\n"
            )
    return changed


def runtime_dir(create: bool = True, environ: Mapping[str, str] | None = None) -> Path | None:
    """A directory only this user can enter, for sockets and short-lived files; None when it is untrusted.

    $XDG_RUNTIME_DIR/memlikehuman when XDG_RUNTIME_DIR is a private directory of this user (the login
    session's own, on tmpfs), else <user cache dir>/memlikehuman/run: never a shared directory such
    as /tmp, where another user could create the name first. `environ` (default: this process's) is
    where XDG_RUNTIME_DIR, XDG_CACHE_HOME and HOME are read. `create` makes it (0700) when missing;
    a directory that is a symlink, of another user or open to others is never repaired or used.
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg) and _private_dir(Path(xdg), follow=True):
        directory = Path(xdg) / "memlikehuman"
    else:
        directory = _cache_dir(env) / "memlikehuman" / "run"
    if create:
        with contextlib.suppress(OSError):
            private_dirs(directory)
    return directory if _private_dir(directory, follow=False) else None


def _cache_dir(env: Mapping[str, str]) -> Path:
    """The user's cache directory as platformdirs computes it on Linux ($XDG_CACHE_HOME or ~/.cache)."""
    cache = env.get("XDG_CACHE_HOME", "")
    return Path(cache) if os.path.isabs(cache) else home_dir(env) / ".cache"


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """The home directory `env` (default: this process's environment) names: `$HOME` when it is an
    absolute path, else the user's entry in the password database (as platformdirs reads it)."""
    env = os.environ if env is None else env
    home = env.get("HOME", "")
    if os.path.isabs(home):
        return Path(home)
    import pwd

    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def _private_dir(path: Path, *, follow: bool) -> bool:
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & OTHERS
