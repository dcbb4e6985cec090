

def test_context_words_says_each_steps_length_not_the_protocol_default():
    from claimcheck.config.protocols import context_words
    ladder = [{"input_len": n, "output_len": 384} for n in (1024, 2048, 12000)]
    assert context_words(ladder) == "1,024 to 12,000 prompt + 384 output tokens, by step"
    assert context_words([{"input_len": 64, "output_len": 1107}] * 3) == (
        "64 prompt + 1,107 output tokens")
    assert context_words([]) == "? prompt + ? output tokens"


def test_relation_words_follow_the_kind():
    from claimcheck.config.protocols import relation_words
    assert relation_words("lanes").startswith("lanes: one prompt")
    assert relation_words("closed_loop").startswith("closed-loop clients")
    assert relation_words(None) == relation_words("bench")
    assert "in flight" in relation_words("bench")
