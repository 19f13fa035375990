"""Model shapes several training tests price by hand."""

from __future__ import annotations

from fabricui.model import ModelShape


def llama3_8b_widths(seq_len: int = 8192) -> ModelShape:
    """A model of Llama 3 8B's widths (h 4096, 32 heads of 128 of which 8 key/value heads,
    SwiGLU f 14336, vocabulary 128256) at ``seq_len`` tokens."""
    return ModelShape(
        id="m",
        name="m",
        params_B=8.0,
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn_hidden=14336,
        mlp="swiglu",
        seq_len=seq_len,
        vocab=128256,
        source="test",
    )
