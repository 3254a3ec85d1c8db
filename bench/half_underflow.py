#!/usr/bin/env python3
"""PyTorch's own float16 error on torchvision models with their default
initialisation (weights=None), the yardstick for cudaep's fp16 sessions of
the same models. Run on the GPU machine:

    python3 bench/half_underflow.py

For each model and batch it prints the largest |logit| in float32, in
float16, and PyTorch's float16 max relative error against its float32
self (TF32 off). With weights=None, torchvision's depthwise convolutions
are initialised with kaiming_normal_(mode="fan_out") over all C * k * k
outputs, so every depthwise layer shrinks its activations and the logits
end far below float16's smallest subnormal (6e-8): any float16 execution
of such a model returns zeros. bench/RESULTS.md has the figures.
"""
import torch, torchvision
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
for name in ("mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"):
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None).eval().cuda()
    for b in (1, 32):
        x = torch.randn(b, 3, 224, 224, device="cuda")
        with torch.no_grad():
            ref = m(x).float()
            h = m.half()(x.half()).float()
            m.float()
        err = ((h - ref).abs().max() / ref.abs().max()).item()
        print(f"{name} b{b}: max|logits| fp32 {ref.abs().max().item():.3e}, fp16 {h.abs().max().item():.3e}, torch fp16 max rel err {err:.3e}", flush=True)
