"""The one bounded reader and the one writer: only regular files, sizes checked first."""

from __future__ import annotations

import os

import pytest

from fabricui.errors import ConfigError, HwdbError
from fabricui.files import check_target, read_bounded, write_text


def test_reads_a_regular_file(tmp_path):
    """The bytes and the file name come back."""
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello")
    assert read_bounded(path, 100) == (b"hello", str(path))


def test_a_fifo_is_refused_without_blocking(tmp_path):
    """A FIFO with no writer would block a plain open(); it is one line instead."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(HwdbError, match=r"pipe: is a FIFO \(named pipe\), expected a log"):
        read_bounded(fifo, 100, HwdbError, "a log")


def test_directory_device_missing_and_too_large(tmp_path):
    """Each is one line naming the file."""
    with pytest.raises(ConfigError, match="is a directory"):
        read_bounded(tmp_path, 100)
    with pytest.raises(ConfigError, match="is a character device"):
        read_bounded("/dev/null", 100)
    with pytest.raises(ConfigError, match="no such file"):
        read_bounded(tmp_path / "nope", 100)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(ConfigError, match="larger than 1000 bytes; trim it"):
        read_bounded(big, 1000, too_large="; trim it")


def test_force_replaces_only_regular_files(tmp_path):
    """--force never replaces a device, a FIFO or a symbolic link, and without it the
    refusal says so rather than suggest --force; a regular file it does replace."""
    for force in (True, False):
        with pytest.raises(ConfigError, match="character device; only a regular file is ever"):
            check_target("/dev/null", force=force)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="FIFO"):
        write_text(fifo, "x", force=True)
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link"):
        write_text(link, "new", force=True)
    assert target.read_text() == "old"
    write_text(target, "new", force=True)
    assert target.read_text() == "new"


def test_a_name_too_long_is_one_line(tmp_path):
    """ENAMETOOLONG is a message, not a traceback."""
    with pytest.raises(ConfigError, match="file name too long"):
        write_text(tmp_path / ("x" * 300), "text")
