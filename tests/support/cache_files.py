"""Files planted in a throw-away user cache: what cep trusts there (the class archive,
the checkpoint jar) depends on who may write the file and its directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def plant(tmp_path: Path, monkeypatch, locate: Callable[[], Path | None], content: bytes,
          file_mode: int, dir_mode: int) -> Path:
    """Point the cache at ``tmp_path``, write ``content`` where ``locate`` says, then
    give the file and its directory those modes."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = locate()
    assert path is not None and path.is_relative_to(tmp_path / "cep")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    path.chmod(file_mode)
    path.parent.chmod(dir_mode)
    return path
