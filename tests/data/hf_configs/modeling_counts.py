#!/usr/bin/env python3
"""Parameter counts of the corpus configs, module by module as each family's
transformers modeling code (or, for remote code, the modeling file its Hub
repository ships) builds them: every nn.Linear with its bias where the code
creates one, every norm's weight (and bias for nn.LayerNorm), embeddings and
the output head. Independent of remat's C++ code: run it to re-derive the
`published_params` of entries whose `published_source` says "modeling code".

    python3 modeling_counts.py falcon-7b.json
"""
import json
import sys


def linear(i, o, bias):
    return i * o + (o if bias else 0)


def dims(c, h_key="hidden_size", l_key="num_hidden_layers", n_key="num_attention_heads"):
    h, L, nh = c[h_key], c[l_key], c[n_key]
    g = c.get("num_key_value_heads") or nh
    hd = c.get("head_dim") or h // nh
    return h, L, nh, g, hd


def attention(h, nh, g, hd, qkv_bias, o_bias):
    return linear(h, nh * hd, qkv_bias) + 2 * linear(h, g * hd, qkv_bias) + linear(nh * hd, h, o_bias)


def gated_mlp(h, f, bias=False):
    return 2 * linear(h, f, bias) + linear(f, h, bias)


def head(c, V, h, tie_default, bias=False):
    tie = c.get("tie_word_embeddings", tie_default)
    return (0 if tie else V * h) + (V if bias else 0)


def exaone4(c):  # Exaone4DecoderLayer: attention (q_norm, k_norm of head_dim), MLP, two post-norms
    h, L, nh, g, hd = dims(c)
    layer = attention(h, nh, g, hd, False, False) + 2 * hd + gated_mlp(h, c["intermediate_size"]) + 2 * h
    return c["vocab_size"] * h + L * layer + h + head(c, c["vocab_size"], h, False)


def olmo3(c):  # Olmo3/Olmo2: q_norm over nh*hd, k_norm over g*hd, post-attention and post-feedforward norms
    h, L, nh, g, hd = dims(c)
    bias = c.get("attention_bias", False)
    layer = attention(h, nh, g, hd, bias, bias) + (nh + g) * hd + gated_mlp(h, c["intermediate_size"]) + 2 * h
    return c["vocab_size"] * h + L * layer + h + head(c, c["vocab_size"], h, False)


def phi(c):  # PhiDecoderLayer: one LayerNorm, q/k/v/dense with bias, fc1/fc2 with bias; lm_head with bias
    h, L, nh, g, hd = dims(c)
    f = c["intermediate_size"]
    layer = 2 * h + attention(h, nh, g, hd, True, True) + linear(h, f, True) + linear(f, h, True)
    V = c["vocab_size"]
    return V * h + L * layer + 2 * h + head(c, V, h, False, bias=True)


def gpt2(c):  # GPT2Block: ln_1, c_attn (h -> 3h), c_proj, ln_2, c_fc, c_proj, all with bias; wte, wpe, ln_f
    h, L, nh, V = c["n_embd"], c["n_layer"], c["n_head"], c["vocab_size"]
    f = c.get("n_inner") or 4 * h
    layer = 2 * (2 * h) + linear(h, 3 * h, True) + linear(h, h, True) + linear(h, f, True) + linear(f, h, True)
    return V * h + c["n_positions"] * h + L * layer + 2 * h + head(c, V, h, True)


def falcon(c):  # FalconDecoderLayer (RW 7B): query_key_value (h -> (nh + 2) hd, multi_query), dense, 4h MLP, one LN
    h = c["hidden_size"]
    nh = c.get("num_attention_heads") or c["n_head"]
    L = c.get("num_hidden_layers") or c["n_layer"]
    hd, V, bias = h // nh, c["vocab_size"], c.get("bias", False)
    new_arch = c.get("new_decoder_architecture", False)
    g = c.get("num_kv_heads", nh) if new_arch else (1 if c.get("multi_query", True) else nh)
    f = c.get("ffn_hidden_size") or 4 * h
    norms = (c.get("num_ln_in_parallel_attn") or 2) if new_arch else (1 if c.get("parallel_attn", True) else 2)
    layer = linear(h, (nh + 2 * g) * hd, bias) + linear(h, h, bias) + linear(h, f, bias) + linear(f, h, bias)
    layer += norms * 2 * h
    return V * h + L * layer + 2 * h + head(c, V, h, True)


def qwen3_5_text(c):  # Qwen3_5 text: every full_attention_interval-th layer attention, the others Gated DeltaNet
    h, L, nh, g, hd = dims(c)
    full = nh * hd * 2 * h + 2 * g * hd * h + nh * hd * h + 2 * hd  # q_proj with the output gate, k, v, o, q/k norms
    kd = c["linear_num_key_heads"] * c["linear_key_head_dim"]
    vh, dv = c["linear_num_value_heads"], c["linear_value_head_dim"]
    vd = vh * dv
    linear = h * (2 * kd + vd) + h * vd + 2 * h * vh  # in_proj_qkv, in_proj_z, in_proj_b and in_proj_a
    linear += (2 * kd + vd) * c.get("linear_conv_kernel_dim", 4) + 2 * vh + dv + vd * h  # conv1d, dt_bias, A_log, norm, out_proj
    types = c.get("layer_types") or [
        "full_attention" if (i + 1) % c.get("full_attention_interval", 4) == 0 else "linear_attention" for i in range(L)]
    mixers = sum(full if t == "full_attention" else linear for t in types)
    layers = mixers + L * (gated_mlp(h, c["intermediate_size"]) + 2 * h)
    return c["vocab_size"] * h + layers + h + head(c, c["vocab_size"], h, False)


COUNTERS = {"exaone4": exaone4, "olmo3": olmo3, "phi": phi, "gpt2": gpt2, "RefinedWebModel": falcon,
            "falcon": falcon, "qwen3_5_text": qwen3_5_text}


def count(config):
    if "text_config" in config:  # the language model of a multimodal wrapper
        text = dict(config["text_config"])
        text.setdefault("tie_word_embeddings", config.get("tie_word_embeddings", False))
        return COUNTERS[text["model_type"]](text)
    return COUNTERS[config["model_type"]](config)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path) as f:
            print(path, count(json.load(f)))
