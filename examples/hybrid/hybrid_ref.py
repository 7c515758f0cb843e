"""Plain-PyTorch references of one Mamba-2 (SSD) layer and one Gated DeltaNet layer, measured
per recompute strategy on the GPU (bf16): bytes saved for backward, kept bytes after forward,
peak above the inputs during forward+backward, median forward/backward times.

mamba_ssm, causal_conv1d and fla are NOT on the GPU image: nothing here uses a fused kernel.
impl "ref": this file's own layers (Mamba-2: mamba_ssm's ssd_minimal_discrete chunked scan in
einsums; Gated DeltaNet: the chunked rule of transformers' torch_chunk_gated_delta_rule).
impl "transformers": transformers' own NemotronHMamba2Mixer / Qwen3NextGatedDeltaNet torch paths
(what the hf profile runs without mamba_ssm / fla), behind the same pre-norm and residual.

Dims: Nemotron-H-8B's Mamba-2 layer (h 4096, 128 heads x 64, state 128, 8 groups, conv 4,
chunk 128) and Qwen3.5-9B's Gated DeltaNet layer (h 4096, 16 key heads, 32 value heads of 128,
conv 4, chunk 64), batch 1.
Usage: python hybrid_ref.py OUT.jsonl
"""
import json
import statistics
import sys
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

BF16 = torch.bfloat16
MAMBA = dict(h=4096, heads=128, p=64, n=128, groups=8, k=4, chunk=128, eps=1e-5)
GDN = dict(h=4096, kh=16, vh=32, dk=128, dv=128, k=4, chunk=64, eps=1e-6)


class RMSNorm(nn.Module):  # LlamaRMSNorm: fp32 upcast, weight times the bf16 cast
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dt)


class GatedRMSNorm(nn.Module):  # MambaRMSNormGated: y * silu(z), RMS per group, fp32
    def __init__(self, d, groups, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.groups, self.eps = groups, eps

    def forward(self, y, z):
        dt = y.dtype
        y = y.float() * F.silu(z.float())
        shp = y.shape
        y = y.view(*shp[:-1], self.groups, shp[-1] // self.groups)
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.view(shp).to(dt)


def segsum(x):
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=torch.bool), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    s = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=torch.bool), diagonal=0)
    return s.masked_fill(~mask, -torch.inf)


def ssd_minimal(X, A, B, C, q):  # mamba_ssm/modules/ssd_minimal.py ssd_minimal_discrete
    b, L, h, p = X.shape
    X, A, B, C = [t.reshape(b, L // q, q, *t.shape[2:]) for t in (X, A, B, C)]
    A = A.permute(0, 3, 1, 2)  # b h c l
    A_cumsum = torch.cumsum(A, dim=-1)
    Lm = torch.exp(segsum(A))
    Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, Lm, X)
    decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, decay_states, X)
    states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
    new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states = new_states[:, :-1]
    Y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C, states, torch.exp(A_cumsum))
    return (Y_diag + Y_off).reshape(b, L, h, p)


class Mamba2Ref(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        inner = c["heads"] * c["p"]
        self.conv_dim = inner + 2 * c["groups"] * c["n"]
        self.norm = RMSNorm(c["h"], c["eps"])
        self.in_proj = nn.Linear(c["h"], inner + self.conv_dim + c["heads"], bias=False)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, c["k"], groups=self.conv_dim, padding=c["k"] - 1)
        self.dt_bias = nn.Parameter(torch.ones(c["heads"]))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, c["heads"] + 1, dtype=torch.float32)))
        self.D = nn.Parameter(torch.ones(c["heads"]))
        self.gnorm = GatedRMSNorm(inner, c["groups"], c["eps"])
        self.out_proj = nn.Linear(inner, c["h"], bias=False)

    def forward(self, x):
        c = self.c
        b, L, _ = x.shape
        inner, gn = c["heads"] * c["p"], c["groups"] * c["n"]
        zxbcdt = self.in_proj(self.norm(x))
        z, xBC, dt = torch.split(zxbcdt, [inner, self.conv_dim, c["heads"]], dim=-1)
        xBC = F.silu(self.conv1d(xBC.transpose(1, 2))[..., :L].transpose(1, 2))
        xs, B, C = torch.split(xBC, [inner, gn, gn], dim=-1)
        dt = F.softplus(dt.float() + self.dt_bias.float())
        A = -torch.exp(self.A_log.float())
        rep = c["heads"] // c["groups"]
        xh = xs.reshape(b, L, c["heads"], c["p"]).float()
        Bh = B.reshape(b, L, c["groups"], c["n"]).float().repeat_interleave(rep, dim=2)
        Ch = C.reshape(b, L, c["groups"], c["n"]).float().repeat_interleave(rep, dim=2)
        y = ssd_minimal(xh * dt[..., None], A * dt, Bh, Ch, c["chunk"])
        y = y + xh * self.D.float()[:, None]
        y = self.gnorm(y.reshape(b, L, inner).to(x.dtype), z)
        return x + self.out_proj(y)


def l2norm(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def chunk_gated_delta_rule(q, k, v, g, beta, chunk):  # transformers torch_chunk_gated_delta_rule
    dtype = q.dtype
    q, k = l2norm(q), l2norm(k)
    q, k, v, beta, g = [t.transpose(1, 2).contiguous().float() for t in (q, k, v, beta, g)]
    b, H, L, dk = k.shape
    dv = v.shape[-1]
    q = q * dk**-0.5
    v_beta, k_beta = v * beta[..., None], k * beta[..., None]
    q, k, v, k_beta, v_beta = [t.reshape(b, H, -1, chunk, t.shape[-1]) for t in (q, k, v, k_beta, v_beta)]
    g = g.reshape(b, H, -1, chunk).cumsum(-1)
    mask = torch.triu(torch.ones(chunk, chunk, dtype=torch.bool, device=q.device), diagonal=0)
    decay_mask = ((g[..., :, None] - g[..., None, :]).tril().exp().float()).tril()
    attn = -((k_beta @ k.transpose(-1, -2)) * decay_mask).masked_fill(mask, 0)
    for i in range(1, chunk):
        row = attn[..., i, :i].clone()
        sub = attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row[..., None] * sub).sum(-2)
    attn = attn + torch.eye(chunk, dtype=attn.dtype, device=attn.device)
    v = attn @ v_beta
    k_cumdecay = attn @ (k_beta * g.exp()[..., None])
    S = torch.zeros(b, H, dk, dv, dtype=v.dtype, device=v.device)
    out = torch.zeros_like(v)
    mask = torch.triu(torch.ones(chunk, chunk, dtype=torch.bool, device=q.device), diagonal=1)
    for i in range(L // chunk):
        q_i, k_i, v_i = q[:, :, i], k[:, :, i], v[:, :, i]
        a = (q_i @ k_i.transpose(-1, -2) * decay_mask[:, :, i]).masked_fill_(mask, 0)
        v_new = v_i - k_cumdecay[:, :, i] @ S
        out[:, :, i] = (q_i * g[:, :, i, :, None].exp()) @ S + a @ v_new
        S = S * g[:, :, i, -1, None, None].exp() + (k_i * (g[:, :, i, -1, None] - g[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new
    return out.reshape(b, H, L, dv).transpose(1, 2).contiguous().to(dtype)


class GDNRef(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        kd, vd = c["kh"] * c["dk"], c["vh"] * c["dv"]
        self.conv_dim = 2 * kd + vd
        self.norm = RMSNorm(c["h"], c["eps"])
        self.in_proj_qkvz = nn.Linear(c["h"], 2 * kd + 2 * vd, bias=False)
        self.in_proj_ba = nn.Linear(c["h"], 2 * c["vh"], bias=False)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, c["k"], groups=self.conv_dim, padding=c["k"] - 1, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(c["vh"]))
        self.A_log = nn.Parameter(torch.log(torch.empty(c["vh"]).uniform_(1, 16)))
        self.gnorm_w = nn.Parameter(torch.ones(c["dv"]))
        self.out_proj = nn.Linear(vd, c["h"], bias=False)

    def forward(self, x):
        c = self.c
        b, L, _ = x.shape
        kd, vd = c["kh"] * c["dk"], c["vh"] * c["dv"]
        u = self.norm(x)
        qkv, z = torch.split(self.in_proj_qkvz(u), [self.conv_dim, vd], dim=-1)
        bb, a = torch.split(self.in_proj_ba(u), [c["vh"], c["vh"]], dim=-1)
        qkv = F.silu(self.conv1d(qkv.transpose(1, 2))[..., :L]).transpose(1, 2)
        q, k, v = torch.split(qkv, [kd, kd, vd], dim=-1)
        rep = c["vh"] // c["kh"]
        q = q.reshape(b, L, c["kh"], c["dk"]).repeat_interleave(rep, dim=2)
        k = k.reshape(b, L, c["kh"], c["dk"]).repeat_interleave(rep, dim=2)
        v = v.reshape(b, L, c["vh"], c["dv"])
        beta = bb.sigmoid()
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
        o = chunk_gated_delta_rule(q, k, v, g, beta, c["chunk"])  # b L vh dv
        # Qwen3NextRMSNormGated: per head, fp32, weight * norm(o) * silu(z)
        of = o.float()
        of = of * torch.rsqrt(of.pow(2).mean(-1, keepdim=True) + c["eps"])
        of = self.gnorm_w * of.to(x.dtype)
        of = of * F.silu(z.reshape(b, L, c["vh"], c["dv"]).float())
        return x + self.out_proj(of.to(x.dtype).reshape(b, L, vd))


class Wrapped(nn.Module):  # a transformers mixer behind a pre-norm and the residual
    def __init__(self, mixer, h, eps):
        super().__init__()
        self.norm = RMSNorm(h, eps)
        self.mixer = mixer

    def forward(self, x):
        out = self.mixer(self.norm(x))
        if isinstance(out, tuple):
            out = out[0]
        return x + out


def tf_mamba():
    from transformers.models.nemotron_h import modeling_nemotron_h as mh
    from transformers import NemotronHConfig
    c = MAMBA
    kw = dict(hidden_size=c["h"], mamba_num_heads=c["heads"], mamba_head_dim=c["p"], ssm_state_size=c["n"],
              n_groups=c["groups"], conv_kernel=c["k"], chunk_size=c["chunk"], num_hidden_layers=1,
              vocab_size=1024, num_attention_heads=32, num_key_value_heads=8, intermediate_size=4096)
    try:
        cfg = NemotronHConfig(hybrid_override_pattern="M", **kw)
    except Exception:
        cfg = NemotronHConfig(layers_block_type=["mamba"], **kw)
    info = {"fast_path": bool(getattr(mh, "is_fast_path_available", False))}
    return Wrapped(mh.NemotronHMamba2Mixer(cfg, layer_idx=0), c["h"], c["eps"]), info


def tf_gdn():
    from transformers.models.qwen3_next import modeling_qwen3_next as mq
    from transformers import Qwen3NextConfig
    c = GDN
    cfg = Qwen3NextConfig(hidden_size=c["h"], linear_num_key_heads=c["kh"], linear_num_value_heads=c["vh"],
                          linear_key_head_dim=c["dk"], linear_value_head_dim=c["dv"], linear_conv_kernel_dim=c["k"],
                          num_hidden_layers=1, layer_types=["linear_attention"], vocab_size=1024)
    m = mq.Qwen3NextGatedDeltaNet(cfg, layer_idx=0)
    info = {"fast_path": bool(getattr(m, "causal_conv1d_fn", None) is not None),
            "chunk_rule": getattr(getattr(m, "chunk_gated_delta_rule", None), "__name__", "?")}
    return Wrapped(m, c["h"], c["eps"]), info


def measure(layer, strategy, seq, h, reps=5):
    params = {p.untyped_storage().data_ptr() for p in layer.parameters()}

    def run_fwd(x):
        if strategy == "none":
            return layer(x)
        return checkpoint(layer, x, use_reentrant=(strategy == "full_reentrant"))

    def fresh():
        x = torch.randn(1, seq, h, dtype=BF16, requires_grad=True)
        return x, torch.randn(1, seq, h, dtype=BF16)

    # saved tensors (unique storages, parameters apart)
    saved = {}
    x, gy = fresh()

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            saved[st.data_ptr()] = (st.nbytes(), list(t.shape), str(t.dtype))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = run_fwd(x)
    y.backward(gy)
    del y
    layer.zero_grad(set_to_none=True)
    # memory: kept after forward, peak above the inputs over forward+backward (grads preallocated)
    for p in layer.parameters():
        p.grad = torch.zeros_like(p)
    x, gy = fresh()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y = run_fwd(x)
    torch.cuda.synchronize()
    after_fwd = torch.cuda.memory_allocated()
    out_bytes = y.untyped_storage().nbytes()
    fwd_peak = torch.cuda.max_memory_allocated() - base
    y.backward(gy)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del y
    x_bytes = x.untyped_storage().nbytes()
    # times
    ev = lambda: torch.cuda.Event(enable_timing=True)
    tf, tb = [], []
    for i in range(reps + 2):
        x, gy = fresh()
        e0, e1, e2 = ev(), ev(), ev()
        e0.record()
        y = run_fwd(x)
        e1.record()
        y.backward(gy)
        e2.record()
        torch.cuda.synchronize()
        if i >= 2:
            tf.append(e0.elapsed_time(e1) / 1e3)
            tb.append(e1.elapsed_time(e2) / 1e3)
        del y
    big = sorted(saved.values(), key=lambda v: -v[0])
    return {
        "saved_bytes": sum(v[0] for v in saved.values()),
        "saved_count": len(saved),
        "saved_largest": big[:16],
        # kept from forward to backward, the layer input counted (remat's kept_bytes includes it)
        "kept_bytes": after_fwd - base - out_bytes + x_bytes,
        "fwd_peak_above_inputs": fwd_peak,
        "peak_above_inputs": peak,
        "input_bytes": x_bytes,
        "fwd_s": statistics.median(tf),
        "bwd_s": statistics.median(tb),
    }


def main():
    out = open(sys.argv[1], "w")
    dev = torch.cuda.get_device_name()
    try:
        import transformers
        tfv = transformers.__version__
    except Exception:
        tfv = None
    for mod in ("mamba_ssm", "causal_conv1d", "fla"):
        try:
            __import__(mod)
            print(mod, "present", flush=True)
        except Exception:
            print(mod, "absent", flush=True)
    cases = [("mamba2", "ref", lambda: (Mamba2Ref(MAMBA), {}), [1024, 4096], MAMBA),
             ("gated_deltanet", "ref", lambda: (GDNRef(GDN), {}), [1024, 4096], GDN),
             ("mamba2", "transformers", tf_mamba, [1024], MAMBA),
             ("gated_deltanet", "transformers", tf_gdn, [1024, 4096], GDN)]
    for block, impl, make, seqs, cfg in cases:
        try:
            with torch.device("cuda"):
                torch.manual_seed(0)
                layer, info = make()
                layer = layer.to(BF16)
                nparam = sum(p.numel() for p in layer.parameters())
                for seq in seqs:
                    for strategy in ["none", "full", "full_reentrant"]:
                        try:
                            r = measure(layer, strategy, seq, cfg["h"])
                            rec = dict(device=dev, torch=torch.__version__, transformers=tfv, block=block, impl=impl, seq=seq, batch=1,
                                       strategy=strategy, dims=cfg, params=nparam, **info, **r)
                        except Exception as e:
                            rec = dict(device=dev, block=block, impl=impl, seq=seq, strategy=strategy,
                                       error=repr(e)[:400])
                        torch.cuda.empty_cache()
                        out.write(json.dumps(rec) + "\n")
                        out.flush()
                        print(block, impl, seq, strategy, {k: rec.get(k) for k in ("saved_bytes", "kept_bytes", "peak_above_inputs", "fwd_s", "bwd_s", "error")}, flush=True)
                del layer
                torch.cuda.empty_cache()
        except Exception as e:
            traceback.print_exc()
            out.write(json.dumps(dict(device=dev, block=block, impl=impl, error=repr(e)[:400])) + "\n")


if __name__ == "__main__":
    main()
