"""The command-line exporter for the softmax-saturation page: its flags, the numbers behind each view."""

import numpy as np
import pandas as pd
import pytest

from attn_core import export
from attn_core.saturation import examples, measures, sweep
from attn_core.saturation.sampling import SamplingSpec
from tests.util import cli_file

# Not the page's defaults, so that a flag the exporter drops shows up.
ARGS = [
    "--page",
    "saturation",
    "--d-k",
    "128",
    "--seq-len",
    "8",
    "--samples",
    "32",
    "--seed",
    "4",
    "--no-scaling",
    "--temperature",
    "0.5",
    "--row",
    "2",
    "--dist",
    "projected",
]
NAMES = ["scores_dk128", "maps_dk128", "saturation_sweep", "gradient_sweep", "row2_dk128", "float16_row2_dk128"]


def read(paths, name: str) -> pd.DataFrame:
    path = next(p for p in paths if p.name.startswith(f"saturation_{name}_"))
    return pd.read_csv(path, encoding="utf-8-sig")


def test_every_flag_reaches_the_numbers(tmp_path):
    argv = [*ARGS, "--format", "csv", "--out", str(tmp_path)]
    paths = export.run(argv)
    assert [p.name for p in paths] == [cli_file(argv, n, "csv") for n in NAMES]
    spec = SamplingSpec(seq_len=8, n_samples=32, seed=4, distribution="projected")
    example = examples.example_scores(spec, 128)
    row = read(paths, "row2_dk128")
    # --no-scaling and --temperature 0.5: softmax(q·k / 0.5) of query 2 (--row)
    np.testing.assert_allclose(row["weight"], measures.row_softmax(example[2], 1.0, 0.5).p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(row["z"], example[2] * 2.0, rtol=1e-5, atol=1e-5)
    swept = sweep.saturation_sweep(spec, sweep.SWEEP_D_K, temperature=0.5)
    np.testing.assert_allclose(read(paths, "saturation_sweep")["max_weight"], swept["max_weight"], rtol=1e-6)
    sample = sweep.score_sample(spec, 128)
    np.testing.assert_allclose(read(paths, "scores_dk128")["density"][:60], sample.raw_density, rtol=1e-5)


def test_the_cli_follows_the_page_defaults(tmp_path):
    argv = ["--page", "saturation", "--view", "dist,row", "--format", "csv", "--out", str(tmp_path)]
    paths = export.run(argv)
    assert [p.name for p in paths] == [cli_file(argv, "scores_dk64", "csv"), cli_file(argv, "row0_dk64", "csv")]
    example = examples.example_scores(SamplingSpec(16, 256, 0), 64, rows=[0])[0]
    np.testing.assert_allclose(read(paths, "row0_dk64")["weight"], measures.row_softmax(example, 1 / 8).p, atol=1e-6)


def test_text_sets_the_number_of_keys(tmp_path):
    paths = export.run(
        [
            "--page",
            "saturation",
            "--text",
            "the cat sat on the mat",
            "--seq-len",
            "100",
            "--view",
            "row",
            "--format",
            "csv",
            "--out",
            str(tmp_path),
        ]
    )
    assert len(read(paths, "row0_dk64")) == 6


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--seq-len", "8", "--row", "8"], "row"),
        (["--dist", "uniform"], "uniform"),
        (["--view", "grid"], "grid"),
        (["--temperature", "0"], "temperature"),
    ],
)
def test_bad_flags_give_a_message_not_a_traceback(tmp_path, capsys, argv, needle):
    assert export.main(["--page", "saturation", *argv, "--format", "csv", "--out", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err
