"""How common a word is in English, from the packaged model's vocabulary (#34)."""

from __future__ import annotations

from querywise.understand.followup.rarity import commonness


def test_common_words_rank_below_rare_ones_and_unknown_words_split_into_pieces() -> None:
    says, spring, tribunal, made_up = commonness("says"), commonness("spring"), commonness("tribunal"), commonness("zorbixate")
    assert commonness("the") == (0.0, 0.0)  # the commonest whole word of the vocabulary
    assert says[0] < tribunal[0] < 1.0 and spring[0] < tribunal[0]
    assert made_up[0] == 1.0 and made_up[1] > 0.0  # not one piece: rarer than any whole word
    assert says[1] == 0.0
    assert commonness("Ground-rent") == max(commonness("ground"), commonness("rent"))  # its rarest part, case aside
