"""torch.ops.fusex against float64 references: values, gradients, layouts, errors, opcheck, torch.compile.

The references are PyTorch's own functions (and litgpt's RoPE path) evaluated in
float64 on the same inputs; tolerances are torch.testing's defaults for the
operator's dtype."""

from __future__ import annotations

import unittest

import torch
import torch.nn.functional as F
from litgpt.model import apply_rope
from torch.library import opcheck

import fusex_torch as fxt

DTYPES = (torch.float32, torch.bfloat16)


def rms_norm_reference(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def qkv_rope_reference(qkv, cos, sin, nh, g, hs, n):
    """litgpt 0.5.13 CausalSelfAttention.forward, up to the attention."""
    B, T, _ = qkv.shape
    q, k, v = qkv.split((nh * hs, g * hs, g * hs), dim=-1)
    q = q.view(B, T, nh, hs).transpose(1, 2)
    k = k.view(B, T, g, hs).transpose(1, 2)
    v = v.view(B, T, g, hs).transpose(1, 2)
    q = torch.cat((apply_rope(q[..., :n], cos[None], sin[None]), q[..., n:]), dim=-1)
    k = torch.cat((apply_rope(k[..., :n], cos[None], sin[None]), k[..., n:]), dim=-1)
    if g != nh:
        k = k.repeat_interleave(nh // g, dim=1)
        v = v.repeat_interleave(nh // g, dim=1)
    return q, k, v


def leaf(t):
    return t.detach().requires_grad_(True)


class Case:
    """One op: its fusex call, its float64 reference and random arguments."""

    def __init__(self, name, fusex_fn, reference_fn, make_args, n_tensor_args):
        self.name, self.fusex_fn, self.reference_fn = name, fusex_fn, reference_fn
        self.make_args, self.n_tensor_args = make_args, n_tensor_args


def rope_cache(T, n, dtype):
    theta = 1.0 / (10000 ** (torch.arange(0, n, 2, dtype=torch.float64) / n))
    ang = torch.outer(torch.arange(T, dtype=torch.float64), theta).repeat(1, 2)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def cases(shape):
    C = shape[-1]
    return [
        Case("gelu", lambda x: fxt.gelu(x), lambda x: F.gelu(x), lambda d: [torch.randn(shape, dtype=d) * 2], 1),
        Case("gelu_tanh", lambda x: fxt.gelu(x, "tanh"), lambda x: F.gelu(x, approximate="tanh"),
             lambda d: [torch.randn(shape, dtype=d) * 2], 1),
        Case("swiglu", fxt.swiglu, lambda a, b: F.silu(a) * b,
             lambda d: [torch.randn(shape, dtype=d) * 2, torch.randn(shape, dtype=d)], 2),
        Case("layer_norm", lambda x, w, b: fxt.layer_norm(x, w, b, 1e-5),
             lambda x, w, b: F.layer_norm(x, (C,), w, b, 1e-5),
             lambda d: [torch.randn(shape, dtype=d) * 3 + 1, torch.randn(C, dtype=d), torch.randn(C, dtype=d)], 3),
        Case("rms_norm", lambda x, w: fxt.rms_norm(x, w, 1e-6), lambda x, w: rms_norm_reference(x, w, 1e-6),
             lambda d: [torch.randn(shape, dtype=d) * 3, torch.randn(C, dtype=d)], 2),
    ]


class OpsAgainstFloat64(unittest.TestCase):
    def check(self, case, args, cotangent_fn=torch.randn_like):
        y = case.fusex_fn(*[leaf(a) if i < case.n_tensor_args else a for i, a in enumerate(args)])
        ref_args = [leaf(a.double()) for a in args]
        y_ref = case.reference_fn(*ref_args)
        self.assertEqual(y.dtype, args[0].dtype)
        torch.testing.assert_close(y, y_ref.to(y.dtype), msg=lambda m: f"{case.name} forward: {m}")

    def values_and_grads(self, case, args, dy=None):
        xs = [leaf(a) for a in args]
        y = case.fusex_fn(*xs)
        if dy is None:
            dy = torch.randn_like(y)
        grads = torch.autograd.grad(y, xs, dy)
        rs = [leaf(a.double()) for a in args]
        y_ref = case.reference_fn(*rs)
        grads_ref = torch.autograd.grad(y_ref, rs, dy.double())
        return y, y_ref, grads, grads_ref

    def assert_case(self, case, args, dy=None, what=""):
        y, y_ref, grads, grads_ref = self.values_and_grads(case, args, dy)
        self.assertEqual(y.shape, y_ref.shape)
        self.assertEqual(y.dtype, args[0].dtype)
        torch.testing.assert_close(y, y_ref.to(y.dtype), msg=lambda m: f"{case.name}{what} forward: {m}")
        for i, (g, r) in enumerate(zip(grads, grads_ref)):
            self.assertEqual(g.dtype, args[i].dtype)
            # weight gradients sum over every row: the tolerance grows with the rows summed
            scale = 1.0 if g.shape == args[0].shape else max(1.0, y.numel() / y.shape[-1] / 16)
            tol = {torch.float32: (1.3e-6, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}[g.dtype]
            torch.testing.assert_close(g, r.to(g.dtype), rtol=tol[0] * scale, atol=tol[1] * scale,
                                       msg=lambda m: f"{case.name}{what} gradient {i}: {m}")

    def test_rank3(self):
        torch.manual_seed(0)
        for d in DTYPES:
            for case in cases((3, 17, 96)):
                with self.subTest(op=case.name, dtype=d):
                    self.assert_case(case, case.make_args(d))

    def test_other_ranks(self):
        torch.manual_seed(1)
        for shape in [(40, 64), (2, 3, 5, 32), (64,)]:
            for case in cases(shape):
                with self.subTest(op=case.name, shape=shape):
                    self.assert_case(case, case.make_args(torch.float32))

    def test_strided_inputs_pass_without_copies(self):
        torch.manual_seed(2)
        for case in cases((4, 9, 48)):
            args = case.make_args(torch.float32)
            # every activation-shaped argument as a strided slice of a larger buffer
            strided = [torch.randn(4, 18, 96)[:, ::2, 1::2].copy_(a) if a.dim() == 3 else a for a in args]
            self.assertFalse(strided[0].is_contiguous())
            with self.subTest(op=case.name):
                self.assert_case(case, strided, what=" (strided)")
                # a broadcast (stride 0) cotangent, as sum().backward() gives
                y = case.fusex_fn(*args)
                self.assert_case(case, strided, dy=torch.ones(()).expand_as(y), what=" (stride-0 dy)")

    def test_unmergeable_leading_dims_are_an_error(self):
        x = torch.randn(6, 4, 5, 32).transpose(0, 1)  # rank 4 whose leading dims do not merge
        with self.assertRaisesRegex(RuntimeError, r"fusex::gelu: x of shape \[4, 6, 5, 32\].*without a copy"):
            fxt.gelu(x)

    def test_qkv_split_rope(self):
        torch.manual_seed(3)
        configs = [(4, 4, 32, 8), (8, 2, 16, 16), (4, 1, 16, 4), (2, 2, 8, 8)]  # MHA, GQA, MQA, full rotary
        for d in DTYPES:
            for nh, g, hs, n in configs:
                with self.subTest(dtype=d, n_head=nh, groups=g, hs=hs, n_elem=n):
                    B, T = 2, 7
                    qkv = torch.randn(B, T, (nh + 2 * g) * hs, dtype=d)
                    cos, sin = rope_cache(T, n, d)
                    x = leaf(qkv)
                    outs = fxt.qkv_split_rope(x, cos[None], sin[None], nh, g, hs, n)
                    xr = leaf(qkv.double())
                    refs = qkv_rope_reference(xr, cos.double(), sin.double(), nh, g, hs, n)
                    cots = [torch.randn_like(o) for o in outs]
                    dx = torch.autograd.grad(outs, x, cots)[0]
                    dx_ref = torch.autograd.grad(refs, xr, [c.double() for c in cots])[0]
                    if d == torch.float32:
                        for o, r in zip(outs, refs):
                            self.assertEqual(o.dtype, d)
                            torch.testing.assert_close(o, r.to(d))
                        torch.testing.assert_close(dx, dx_ref.to(d))
                        continue
                    # 16-bit RoPE rounds x*cos, rotated*sin and their sum, in fusex as in litgpt: compare with
                    # litgpt's own bf16 path at bf16's tolerance, and with float64 within those roundings
                    xl = leaf(qkv)
                    lit = qkv_rope_reference(xl, cos, sin, nh, g, hs, n)
                    dx_lit = torch.autograd.grad(lit, xl, cots)[0]
                    bound = 3 * 2.0 ** -8 * qkv.abs().max().item()
                    for o, r, l in zip(outs, refs, lit):
                        self.assertEqual(o.dtype, d)
                        torch.testing.assert_close(o, l)
                        torch.testing.assert_close(o.double(), r, rtol=0, atol=bound)
                    torch.testing.assert_close(dx, dx_lit)
                    torch.testing.assert_close(dx.double(), dx_ref, rtol=0, atol=bound * 4)


class Errors(unittest.TestCase):
    def test_messages_name_the_op_and_the_values(self):
        x = torch.randn(2, 5, 64)
        w = torch.randn(64)
        with self.assertRaisesRegex(RuntimeError, r"fusex::layer_norm: weight has shape \[63\], expected \[64\]"):
            fxt.layer_norm(x, w[:63], w, 1e-5)
        with self.assertRaisesRegex(RuntimeError, r"fusex::rms_norm: weight has shape \[64, 1\]"):
            fxt.rms_norm(x, w[:, None], 1e-5)
        with self.assertRaisesRegex(RuntimeError, r"fusex::gelu: tensors of dtype Double are not supported"):
            fxt.gelu(x.double())
        with self.assertRaisesRegex(RuntimeError, r"fusex::gelu: approximate must be 'none' or 'tanh', got 'erf'"):
            fxt.gelu(x, "erf")
        with self.assertRaisesRegex(RuntimeError, r"fusex::swiglu: b has shape \[2, 5, 32\], a has shape \[2, 5, 64\]"):
            fxt.swiglu(x, x[..., :32])
        with self.assertRaisesRegex(RuntimeError, r"fusex::layer_norm: argument 1 has dtype BFloat16, expected Float"):
            fxt.layer_norm(x, w.bfloat16(), w, 1e-5)
        cos, sin = rope_cache(5, 8, torch.float32)
        with self.assertRaisesRegex(RuntimeError, r"fusex::qkv_split_rope: qkv has 64 features, expected .* = 96"):
            fxt.qkv_split_rope(x, cos, sin, 4, 1, 16, 8)
        with self.assertRaisesRegex(RuntimeError, r"fusex::qkv_split_rope: n_head \(4\) must be a positive multiple"):
            fxt.qkv_split_rope(x, cos, sin, 4, 3, 16, 8)
        with self.assertRaisesRegex(RuntimeError, r"fusex::qkv_split_rope: cos has shape \[4, 8\], expected \[5, 8\]"):
            fxt.qkv_split_rope(torch.randn(2, 5, 96), cos[:4], sin[:4], 4, 1, 16, 8)

    def test_backward_checks_what_the_forward_returned(self):
        x = torch.randn(3, 8)
        w = torch.randn(8)
        y, mean, rstd = torch.ops.fusex.layer_norm(x, w, w, 1e-5)
        with self.assertRaisesRegex(RuntimeError, r"fusex::layer_norm_backward: rstd has shape \[2, 1\], expected \[3, 1\]"):
            torch.ops.fusex.layer_norm_backward(x, w, w, 1e-5, y, mean, rstd[:2], y)


class TorchIntegration(unittest.TestCase):
    def test_opcheck(self):
        torch.manual_seed(4)
        x = torch.randn(2, 5, 32, requires_grad=True)
        w = torch.randn(32, requires_grad=True)
        b = torch.randn(32, requires_grad=True)
        cos, sin = rope_cache(5, 8, torch.float32)
        calls = {
            "gelu": (x,), "swiglu": (x, torch.randn(2, 5, 32, requires_grad=True)),
            "layer_norm": (x, w, b, 1e-5), "rms_norm": (x, w, 1e-6),
            "qkv_split_rope": (torch.randn(2, 5, 8 * 8, requires_grad=True), cos, sin, 4, 2, 8, 8),
        }
        for name, args in calls.items():
            for d in DTYPES:
                cast = tuple(a.detach().to(d).requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                             for a in args)
                with self.subTest(op=name, dtype=d):
                    result = opcheck(getattr(torch.ops.fusex, name).default, cast)
                    self.assertTrue(all(v == "SUCCESS" for v in result.values()), result)
        result = opcheck(torch.ops.fusex.gelu.default, (x,), {"approximate": "tanh"})
        self.assertTrue(all(v == "SUCCESS" for v in result.values()), result)

    def test_torch_compile_traces_through(self):
        torch.manual_seed(5)

        def block(x, w, b, qkv, cos, sin):
            h = fxt.layer_norm(x, w, b, 1e-5)
            h = fxt.gelu(h) + fxt.swiglu(h, fxt.rms_norm(x, w, 1e-6))
            q, k, v = fxt.qkv_split_rope(qkv, cos, sin, 4, 2, 8, 8)
            return h.sum() + (q * k + v).sum()

        compiled = torch.compile(block, backend="aot_eager", fullgraph=True, dynamic=True)
        for T in (5, 9):  # one graph for both sequence lengths
            cos, sin = rope_cache(T, 8, torch.float32)
            args = [torch.randn(2, T, 32), torch.randn(32), torch.randn(32), torch.randn(2, T, 64), cos, sin]
            eager_args = [leaf(a) for a in args[:4]] + args[4:]
            comp_args = [leaf(a) for a in args[:4]] + args[4:]
            ref = block(*eager_args)
            out = compiled(*comp_args)
            torch.testing.assert_close(out, ref)
            for g, r in zip(torch.autograd.grad(out, comp_args[:4]), torch.autograd.grad(ref, eager_args[:4])):
                torch.testing.assert_close(g, r)


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device: the CUDA executor path is not run here")
class OnCuda(unittest.TestCase):
    """The nvcc build (FUSEX_TORCH_CUDA=1): every op and its gradients on CUDA tensors equal the CPU run's."""

    def test_ops_match_the_host_executor(self):
        torch.manual_seed(6)
        for d in DTYPES:
            for case in cases((3, 17, 96)):
                with self.subTest(op=case.name, dtype=d):
                    args = case.make_args(d)
                    cpu = [leaf(a) for a in args]
                    gpu = [leaf(a.cuda()) for a in args]
                    y_cpu, y_gpu = case.fusex_fn(*cpu), case.fusex_fn(*gpu)
                    dy = torch.randn_like(y_cpu)
                    g_cpu = torch.autograd.grad(y_cpu, cpu, dy)
                    g_gpu = torch.autograd.grad(y_gpu, gpu, dy.cuda())
                    torch.testing.assert_close(y_gpu.cpu(), y_cpu)
                    for a, b in zip(g_gpu, g_cpu):
                        torch.testing.assert_close(a.cpu(), b, rtol=1e-4 if d == torch.float32 else 1.6e-2, atol=1e-5)
        qkv = torch.randn(2, 7, 8 * 16)
        cos, sin = rope_cache(7, 8, torch.float32)
        outs_cpu = fxt.qkv_split_rope(qkv, cos, sin, 4, 2, 16, 8)
        outs_gpu = fxt.qkv_split_rope(qkv.cuda(), cos.cuda(), sin.cuda(), 4, 2, 16, 8)
        for a, b in zip(outs_gpu, outs_cpu):
            torch.testing.assert_close(a.cpu(), b)

    def test_runs_on_the_current_stream(self):
        x = torch.randn(4, 256, 512, device="cuda")
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            y = fxt.gelu(x)
        s.synchronize()
        torch.testing.assert_close(y.cpu(), fxt.gelu(x.cpu()))

    def test_device_mismatch_is_an_error(self):
        with self.assertRaisesRegex(RuntimeError, r"fusex::layer_norm: argument 1 is on cpu"):
            fxt.layer_norm(torch.randn(2, 8, device="cuda"), torch.randn(8), torch.randn(8, device="cuda"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
