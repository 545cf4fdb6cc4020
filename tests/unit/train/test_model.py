"""LARS (worker/train/model.py ``lars``) against You, Gitman & Ginsburg (2017),
Algorithm 1: a weight tensor's local rate is ``η·‖w‖ / (‖∇L(w)‖ + β‖w‖)`` and its step
``γ·local·(∇L(w) + βw)`` through momentum; biases and BatchNorm parameters are plain SGD
with momentum, undecayed."""

from __future__ import annotations

import torch
from torch import nn

from worker.train.model import lars, make_optimizer

TRUST, MOMENTUM = 0.001, 0.9


def _paper_steps(w: torch.Tensor, grads: list[torch.Tensor], lr: float, wd: float,
                 scaled: bool) -> torch.Tensor:
    """The paper's update, written out, with Nesterov momentum."""
    w, buf = w.clone(), torch.zeros_like(w)
    for g in grads:
        if scaled:
            local = TRUST * w.norm() / (g.norm() + wd * w.norm())
            step = local * (g + wd * w)
        else:
            step = g
        buf = MOMENTUM * buf + step
        w = w - lr * (step + MOMENTUM * buf)
    return w


def test_lars_steps_as_the_paper_writes_them():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 4), nn.BatchNorm1d(4))
    start = {n: p.detach().clone() for n, p in net.named_parameters()}
    grads = {n: [torch.randn_like(p) for _ in range(3)] for n, p in net.named_parameters()}
    opt = lars(net, lr=0.5, weight_decay=0.05)
    for k in range(3):
        for n, p in net.named_parameters():
            p.grad = grads[n][k].clone()
        opt.step()
    for n, p in net.named_parameters():
        want = _paper_steps(start[n], grads[n], 0.5, 0.05, scaled=p.ndim > 1)
        torch.testing.assert_close(p.detach(), want, rtol=1e-5, atol=1e-7, msg=n)


def test_the_weights_rate_is_scaled_without_weight_decay_too():
    torch.manual_seed(1)
    net = nn.Linear(8, 4)
    w0 = net.weight.detach().clone()
    g = torch.randn_like(w0)
    opt = make_optimizer(net, "lars", lr=1.0, weight_decay=0.0)
    net.weight.grad, net.bias.grad = g.clone(), torch.zeros_like(net.bias)
    opt.step()
    torch.testing.assert_close(net.weight.detach(), _paper_steps(w0, [g], 1.0, 0.0, True))
