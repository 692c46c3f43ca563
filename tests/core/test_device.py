"""The device description is numbers and names (the UI translates it), no display text."""

from __future__ import annotations

import pytest
import torch

from attn_core.runtime.device import DeviceInfo, device_info, device_label


def test_cpu_info_is_the_thread_count():
    info = device_info(torch.device("cpu"))
    assert info == DeviceInfo("cpu", threads=torch.get_num_threads())
    assert device_label(torch.device("cpu")) == f"CPU · {info.threads} thread{'s' if info.threads != 1 else ''}"


def test_one_thread_is_singular():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert device_info(torch.device("cpu")).threads == 1
        assert device_label(torch.device("cpu")) == "CPU · 1 thread"
    finally:
        torch.set_num_threads(before)


@pytest.mark.cuda
def test_cuda_info_names_the_gpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    info = device_info(torch.device("cuda"))
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    assert info.kind == "cuda" and info.name == props.name
    assert info.memory_gib == pytest.approx(props.total_memory / 2**30)


def _wait_policy(env: dict[str, str]) -> str:
    import os
    import subprocess
    import sys

    code = "import attn_core, os, sys; assert 'torch' in sys.modules; print(os.environ.get('OMP_WAIT_POLICY'))"
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_openmp_threads_sleep_when_they_wait_unless_told_otherwise():
    """attn_core sets OMP_WAIT_POLICY=PASSIVE before torch loads OpenMP: spinning threads on busy cores made
    the saturation sweep 30x slower (docs/deploy.md); an explicit setting is kept."""
    assert _wait_policy({}) == "PASSIVE"
    assert _wait_policy({"OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE"
