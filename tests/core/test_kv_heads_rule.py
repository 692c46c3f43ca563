"""attn_core.runtime.config.kv_heads_keeping_group: what n_kv_heads follows a learner's choice when n_heads changes."""

import pytest

from attn_core.runtime.config import ConfigError, divisors, kv_heads_keeping_group


@pytest.mark.parametrize(
    "choice,n_heads,expected",
    [
        # 2 KV heads for 8 (4 query heads per KV head)
        ((8, 2), 9, 3),  # 4 does not divide 9: groups of 3 (1 and 3 are the candidates on the side of more KV heads)
        ((8, 2), 10, 5),  # groups of 2; groups of 5 (2 KV heads) would share more than chosen
        ((8, 2), 8, 2),  # back: the choice itself
        ((8, 2), 12, 3),  # groups of 4 kept
        ((8, 2), 16, 4),
        ((8, 2), 7, 7),  # prime: only groups of 1 are at most 4
        ((8, 2), 2, 1),  # groups of 2 (at most 4)
        # MHA stays MHA, MQA stays MQA
        ((8, 8), 9, 9),
        ((8, 8), 64, 64),
        ((8, 1), 9, 1),
        ((8, 1), 16, 1),
        # a choice at one head (MHA and MQA at once) keeps groups of 1
        ((1, 1), 6, 6),
        ((12, 3), 9, 3),  # groups of 4 -> 3
        ((12, 6), 15, 15),  # groups of 2 -> 1 (15 has no even divisor)
    ],
)
def test_rule_by_hand(choice, n_heads, expected):
    assert kv_heads_keeping_group(n_heads, *choice) == expected


@pytest.mark.parametrize("h0,kv0", [(h, kv) for h in (4, 6, 8, 12) for kv in divisors(h)])
def test_rule_properties(h0, kv0):
    g0 = h0 // kv0
    for n_heads in range(1, 65):
        kv = kv_heads_keeping_group(n_heads, h0, kv0)
        assert n_heads % kv == 0  # always valid
        if kv0 == 1 and h0 > 1:
            assert kv == 1
            continue
        g = n_heads // kv
        assert g <= g0  # never more sharing than chosen
        # the largest such group size: no divisor of n_heads lies strictly between g and g0
        assert not any(g < d <= g0 for d in divisors(n_heads))
        if n_heads % g0 == 0:
            assert g == g0  # the choice comes back wherever it is valid
    assert kv_heads_keeping_group(h0, h0, kv0) == kv0


def test_rule_rejects_an_invalid_choice():
    with pytest.raises(ConfigError):
        kv_heads_keeping_group(8, 8, 3)
