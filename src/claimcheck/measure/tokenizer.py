"""A synthetic tokenizer for dummy weights: WordLevel over ``w0 .. w{V-1}``.

Random token ids decode to ``w17 w4032 ...`` and re-encode to the same ids, which
``vllm bench serve --dataset-name random`` relies on. No network, no checkpoint.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def build_synthetic_tokenizer(vocab_size: int, out_dir: str | Path) -> Path:
    """Write tokenizer.json + tokenizer_config.json for ``vocab_size`` ids; return the dir.

    Idempotent: an existing tokenizer of the same size is reused.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers

    out = Path(out_dir)
    stamp = out / "claimcheck-tokenizer.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("vocab_size") == vocab_size:
        return out
    out.mkdir(parents=True, exist_ok=True)
    vocab = {f"w{i}": i for i in range(vocab_size)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1 << 20,
        "clean_up_tokenization_spaces": False, "eos_token": f"w{vocab_size - 1}",
        "chat_template": "{% for m in messages %}{{ m['content'] }} {% endfor %}",
    }, indent=1))
    digest = hashlib.sha256((out / "tokenizer.json").read_bytes()).hexdigest()
    stamp.write_text(json.dumps({"kind": "synthetic WordLevel w0..w{V-1}",
                                 "vocab_size": vocab_size, "sha256": digest}))
    return out


def synthetic_vocab_size(engine: Any, root: Path | None = None) -> int | None:
    """Words of the synthetic tokenizer an engine is served with (its model's
    ``vocab_size``), or None when the engine uses its checkpoint's tokenizer."""
    if getattr(engine, "tokenizer", None) != "synthetic":
        return None
    from claimcheck.files.paths import ROOT
    from claimcheck.physics.modelfiles import load_config
    cfg = load_config(engine.config_json(root or ROOT))
    return int((cfg.get("text_config") or cfg)["vocab_size"])
