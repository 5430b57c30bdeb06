#!/usr/bin/python3
"""Writes a tiny random-weights llama-architecture GGUF model for titan's serving tests.

    /usr/bin/python3 scripts/make_test_model.py --gguf-py DIR --vocab VOCAB.gguf --out MODEL.gguf

Contract:
  - Needs only Debian's python3 + python3-numpy and llama.cpp's gguf-py (--gguf-py, put on
    sys.path); scripts/llama_server.sh passes the copy from the node-llama-cpp bundle and caches
    the result keyed by this file's hash and the vocabulary's hash.
  - The tokenizer (every tokenizer.* key: model, pre, tokens, scores, token types, special token
    ids, add_bos/eos) is copied from VOCAB, one of llama.cpp's models/ggml-vocab-*.gguf files
    (llama_server.sh uses ggml-vocab-llama-bpe.gguf: Llama 3's byte-level BPE vocabulary, 128256
    tokens; ggml-vocab-llama-spm.gguf, Llama 2's 32000, works too). A ChatML chat template is
    added when the vocabulary has none, so /v1/chat/completions works out of the box.
  - Weights come from a fixed seed, so the output is byte-identical on every run.
  - Sized for load tests on a 2-core CPU: decoding one token costs a few milliseconds (about 2.5 ms
    with one thread), dominated by the 128256-way output projection (embeddings tied to the
    output), while the transformer blocks are small, so a prefill of a few hundred tokens costs
    tens of milliseconds (llama-server computes logits only for a batch's last token). See SHAPE.
  - The output rows of the tokens that must not be generated (control tokens such as BOS/EOS,
    byte tokens, BPE pieces that are not valid UTF-8 alone) are zero, so their logit is exactly 0
    while the other tokens' logits spread with a standard deviation of about 3: generation
    practically never stops at end-of-sequence (with the server's default top-k it cannot), so
    every request produces max_tokens tokens, and the text is valid UTF-8.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SEED = 20240601
SHAPE = dict(
    n_layer=4,
    n_embd=256,
    n_head=4,
    n_head_kv=4,
    n_ff=768,
    n_ctx=4096,
)
CHATML = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2 byte-level BPE: the printable character that stands for each byte in token text."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def printable_tokens(fields, tokens, token_types, gguf):
    """Mask of the tokens the model may generate: normal tokens whose text is valid UTF-8 on its
    own. Byte tokens (SPM <0xNN>) and byte-level BPE pieces of a multi-byte character are left
    out: random sequences of them are invalid UTF-8, which llama-server answers with HTTP 500
    ("The model produced output that does not match the expected Content-only format")."""
    import numpy as np

    normal = np.asarray(token_types) == int(gguf.TokenType.NORMAL)
    if fields["tokenizer.ggml.model"].contents() != "gpt2":
        return normal
    dec = gpt2_byte_decoder()
    ok = np.zeros(len(tokens), dtype=bool)
    for i, t in enumerate(tokens):
        if not normal[i]:
            continue
        try:
            bytes(dec[c] for c in t).decode("utf-8")
            ok[i] = True
        except (KeyError, UnicodeDecodeError):
            pass
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory")
    ap.add_argument("--vocab", required=True, help="a llama.cpp models/ggml-vocab-*.gguf file")
    ap.add_argument("--out", required=True, help="output .gguf path")
    args = ap.parse_args()

    sys.path.insert(0, args.gguf_py)
    import numpy as np
    import gguf

    vocab = gguf.GGUFReader(args.vocab)
    fields = vocab.fields
    arch = "llama"
    tokens = fields["tokenizer.ggml.tokens"].contents()
    token_types = fields["tokenizer.ggml.token_type"].contents()
    n_vocab = len(tokens)

    s = SHAPE
    head_dim = s["n_embd"] // s["n_head"]
    w = gguf.GGUFWriter(args.out, arch)
    w.add_name("titan-tiny-llama-random")
    w.add_description("random weights, for load-testing llama-server; output is gibberish")
    w.add_context_length(s["n_ctx"])
    w.add_embedding_length(s["n_embd"])
    w.add_block_count(s["n_layer"])
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    # Tokenizer: copy every tokenizer.* key with its exact GGUF type.
    for key, field in fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub_type = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), vtype, sub_type)
    if "tokenizer.chat_template" not in fields:
        w.add_chat_template(CHATML)

    rng = np.random.default_rng(SEED)

    def normal(shape: tuple[int, ...], std: float) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float16)

    def ones(n: int, value: float = 1.0) -> np.ndarray:
        return np.full(n, value, dtype=np.float32)

    d, ff = s["n_embd"], s["n_ff"]
    # Token embeddings, also the (tied) output projection: logit = row . rmsnorm(h) * output_norm.
    embd = normal((n_vocab, d), 1.0 / np.sqrt(d))
    embd[~printable_tokens(fields, tokens, token_types, gguf)] = 0
    w.add_tensor("token_embd.weight", embd)
    for i in range(s["n_layer"]):
        std = 1.0 / np.sqrt(d)
        w.add_tensor(f"blk.{i}.attn_norm.weight", ones(d))
        w.add_tensor(f"blk.{i}.attn_q.weight", normal((s["n_head"] * head_dim, d), std))
        w.add_tensor(f"blk.{i}.attn_k.weight", normal((s["n_head_kv"] * head_dim, d), std))
        w.add_tensor(f"blk.{i}.attn_v.weight", normal((s["n_head_kv"] * head_dim, d), std))
        w.add_tensor(f"blk.{i}.attn_output.weight", normal((d, s["n_head"] * head_dim), std * 0.5))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", ones(d))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", normal((ff, d), std))
        w.add_tensor(f"blk.{i}.ffn_up.weight", normal((ff, d), std))
        w.add_tensor(f"blk.{i}.ffn_down.weight", normal((d, ff), 0.5 / np.sqrt(ff)))
    # rmsnorm(h) has unit rms, so a row of std 1/sqrt(d) gives logits of std ~1; scale to ~3.
    w.add_tensor("output_norm.weight", ones(d, 3.0))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    size = Path(args.out).stat().st_size
    print(
        f"make_test_model: wrote {args.out} ({size / 1e6:.1f} MB): llama, {s['n_layer']} layers, "
        f"n_embd {d}, {s['n_head']} heads, n_ff {ff}, ctx {s['n_ctx']}, vocab {n_vocab} "
        f"from {Path(args.vocab).name}, seed {SEED}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
