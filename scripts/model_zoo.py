# ===- model_zoo.py - The model zoo's PyTorch definitions -----------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# The architectures of the model zoo (docs/ModelZoo.md), their example
# inputs and the list of exports, shared by scripts/export-model-zoo.py,
# which exports them with torch-mlir on the CPU, and bench/zoo/run_zoo.py,
# which runs them on the GPU against kopt's runtime modules. Needs torch and
# torchvision only (no torch-mlir). Models and inputs are made on torch's
# default device (build them under `with torch.device("cuda"):` for the
# GPU); a forward pass makes its own tensors on its input's device.
#
# ===----------------------------------------------------------------------===#

import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.vision_transformer import EncoderBlock


def weight_names(model):
    """Parameters, then buffers (batch-norm statistics, Swin's relative
    position index), but batch norm's counters (`num_batches_tracked`),
    which eval mode does not read. An integer buffer the model reads is an
    argument too: frozen into the graph inside an index list, torch-mlir's
    importer refuses it ("Heterogeneous lists are not supported")."""
    names = [n for n, _ in model.named_parameters()]
    names += [
        n for n, _ in model.named_buffers()
        if n.split(".")[-1] != "num_batches_tracked"
    ]
    return names


class VitPatchBlock(nn.Module):
    """ViT-B/16 front: 16x16 patch embedding, class token, position
    embedding and one encoder block (torchvision's VisionTransformer)."""

    def __init__(self, image=224, patch=16, dim=768, heads=12, mlp=3072):
        super().__init__()
        self.conv_proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        seq = (image // patch)**2 + 1
        # Initialised as torchvision's VisionTransformer does.
        self.pos_embedding = nn.Parameter(
            torch.empty(1, seq, dim).normal_(std=0.02))
        self.block = EncoderBlock(heads, dim, mlp, 0.0, 0.0,
                                  partial(nn.LayerNorm, eps=1e-6))

    def forward(self, x):
        n = x.shape[0]
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        return self.block(x + self.pos_embedding)


class BertBaseLayer(nn.Module):
    """BERT-base embeddings (word, position, token type, LayerNorm) and one
    encoder layer: self-attention with the additive padding mask, GELU
    feed-forward, post-LayerNorm residuals."""

    def __init__(self, vocab=30522, max_pos=512, types=2, dim=768, heads=12,
                 ffn=3072, eps=1e-12):
        super().__init__()
        self.heads = heads
        self.word_embeddings = nn.Embedding(vocab, dim)
        self.position_embeddings = nn.Embedding(max_pos, dim)
        self.token_type_embeddings = nn.Embedding(types, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=eps)
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.attn_out = nn.Linear(dim, dim)
        self.attn_norm = nn.LayerNorm(dim, eps=eps)
        self.intermediate = nn.Linear(dim, ffn)
        self.output = nn.Linear(ffn, dim)
        self.out_norm = nn.LayerNorm(dim, eps=eps)

    def split(self, x):
        b, s, d = x.shape
        return x.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, input_ids, token_type_ids, attention_mask):
        b, s = input_ids.shape
        pos = torch.arange(s, dtype=torch.int64,
                           device=input_ids.device).unsqueeze(0)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(pos) +
             self.token_type_embeddings(token_type_ids))
        x = self.emb_norm(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype))
        mask = mask * torch.finfo(x.dtype).min
        q, k, v = (self.split(f(x)) for f in (self.query, self.key,
                                                self.value))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        probs = torch.softmax(scores + mask, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(b, s, -1)
        x = self.attn_norm(self.attn_out(ctx) + x)
        h = F.gelu(self.intermediate(x))
        return self.out_norm(self.output(h) + x)


class Gpt2Block(nn.Module):
    """One GPT-2 block: pre-LayerNorm, fused QKV projection (Conv1D, i.e.
    addmm with a [in, out] weight), causal mask, tanh GELU MLP."""

    def __init__(self, dim=768, heads=12, eps=1e-5):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim, eps=eps)
        self.c_attn_w = nn.Parameter(torch.empty(dim, 3 * dim))
        self.c_attn_b = nn.Parameter(torch.empty(3 * dim))
        self.c_proj_w = nn.Parameter(torch.empty(dim, dim))
        self.c_proj_b = nn.Parameter(torch.empty(dim))
        self.ln_2 = nn.LayerNorm(dim, eps=eps)
        self.c_fc_w = nn.Parameter(torch.empty(dim, 4 * dim))
        self.c_fc_b = nn.Parameter(torch.empty(4 * dim))
        self.mlp_proj_w = nn.Parameter(torch.empty(4 * dim, dim))
        self.mlp_proj_b = nn.Parameter(torch.empty(dim))
        # GPT-2's initialisation: N(0, 0.02) weights, zero biases.
        for name, param in self.named_parameters():
            if name.endswith("_w"):
                nn.init.normal_(param, std=0.02)
            elif name.endswith("_b"):
                nn.init.zeros_(param)

    @staticmethod
    def conv1d(x, w, b):
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(
            *x.shape[:-1], w.shape[-1])

    def forward(self, x):
        b, s, d = x.shape
        h = self.conv1d(self.ln_1(x), self.c_attn_w, self.c_attn_b)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in h.split(d, dim=2))
        scores = q @ k.transpose(-1, -2) / math.sqrt(v.shape[-1])
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        scores = torch.where(causal, scores,
                             torch.tensor(torch.finfo(x.dtype).min,
                                          device=x.device))
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2)
        x = x + self.conv1d(ctx.reshape(b, s, d), self.c_proj_w,
                            self.c_proj_b)
        m = F.gelu(self.conv1d(self.ln_2(x), self.c_fc_w, self.c_fc_b),
                   approximate="tanh")
        return x + self.conv1d(m, self.mlp_proj_w, self.mlp_proj_b)


class RMSNorm(nn.Module):

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    """One LLaMA-style decoder block (TinyLlama-1.1B sizes): RMSNorm,
    rotary position embeddings computed from the positions, grouped-query
    causal attention (scaled_dot_product_attention), SwiGLU MLP."""

    def __init__(self, dim=2048, heads=32, kv_heads=4, ffn=5632,
                 theta=10000.0):
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads
        self.head_dim = dim // heads
        self.theta = theta
        self.input_norm = RMSNorm(dim)
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.post_norm = RMSNorm(dim)
        self.gate_proj = nn.Linear(dim, ffn, bias=False)
        self.up_proj = nn.Linear(dim, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, dim, bias=False)

    def rotary(self, s, device):
        inv_freq = 1.0 / (self.theta**(torch.arange(
            0, self.head_dim, 2, dtype=torch.float32, device=device) /
                                       self.head_dim))
        pos = torch.arange(s, dtype=torch.float32, device=device)
        emb = torch.outer(pos, inv_freq)
        emb = torch.cat((emb, emb), dim=-1)
        return emb.cos()[None, None], emb.sin()[None, None]

    def forward(self, x):
        b, s, _ = x.shape
        h = self.input_norm(x)
        q = self.q_proj(h).view(b, s, self.heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.kv_heads, -1).transpose(1, 2)
        cos, sin = self.rotary(s, x.device)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(ctx.transpose(1, 2).reshape(b, s, -1))
        h = self.post_norm(x)
        return x + self.down_proj(
            F.silu(self.gate_proj(h)) * self.up_proj(h))


class UNetResBlock(nn.Module):
    """The ResNet block of Stable Diffusion's UNet at its first level:
    GroupNorm(32) + SiLU + 3x3 conv, plus the projected time embedding,
    then GroupNorm + SiLU + 3x3 conv, plus the block's input."""

    def __init__(self, channels=320, time_dim=1280):
        super().__init__()
        self.norm1 = nn.GroupNorm(32, channels, eps=1e-5)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.time_proj = nn.Linear(time_dim, channels)
        self.norm2 = nn.GroupNorm(32, channels, eps=1e-5)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


def image(batch=1):
    return (torch.randn(batch, 3, 224, 224),)


def bert_inputs(batch=2, seq=128):
    ids = torch.randint(0, 30522, (batch, seq), dtype=torch.int64)
    types = torch.zeros(batch, seq, dtype=torch.int64)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[:, seq - 16:] = 0
    return (ids, types, mask)


# name -> (model builder, example inputs, description)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), image,
                 "torchvision resnet18, x: [1,3,224,224]"),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), image,
                 "torchvision resnet50, x: [1,3,224,224]"),
    "mobilenet_v2":
        (lambda: torchvision.models.mobilenet_v2(weights=None), image,
         "torchvision mobilenet_v2, x: [1,3,224,224]"),
    "alexnet": (lambda: torchvision.models.alexnet(weights=None), image,
                "torchvision alexnet, x: [1,3,224,224]"),
    "vgg16": (lambda: torchvision.models.vgg16(weights=None), image,
              "torchvision vgg16, x: [1,3,224,224]"),
    "vit_b16_block": (VitPatchBlock, image,
                      "ViT-B/16 patch embedding + class token + position "
                      "embedding + one encoder block, x: [1,3,224,224]"),
    "bert_base_layer": (BertBaseLayer, bert_inputs,
                        "BERT-base embeddings + one encoder layer, "
                        "input_ids/token_type_ids/attention_mask: [2,128] "
                        "i64"),
    "gpt2_block": (Gpt2Block,
                   lambda batch=1: (torch.randn(batch, 128, 768),),
                   "one GPT-2 block (causal, tanh GELU), x: [1,128,768]"),
    "llama_block": (LlamaBlock,
                    lambda batch=1: (torch.randn(batch, 128, 2048),),
                    "one LLaMA-style decoder block (RMSNorm, RoPE, GQA "
                    "32/4 heads, SwiGLU), x: [1,128,2048]"),
    "unet_resblock": (UNetResBlock,
                      lambda batch=1: (torch.randn(batch, 320, 64, 64),
                                       torch.randn(batch, 1280)),
                      "Stable Diffusion's UNet ResNet block (GroupNorm 32 + "
                      "SiLU + conv 3x3, time embedding, twice, residual), "
                      "x: [1,320,64,64], temb: [1,1280]"),
}

# (file stem, model, output type, batch dimension dynamic)
EXPORTS = [(name, name, "linalg-on-tensors", False) for name in MODELS] + [
    ("resnet18_tosa", "resnet18", "tosa", False),
    ("gpt2_block_tosa", "gpt2_block", "tosa", False),
    ("resnet18_dynbatch", "resnet18", "linalg-on-tensors", True),
    ("bert_base_layer_dynbatch", "bert_base_layer", "linalg-on-tensors",
     True),
]
