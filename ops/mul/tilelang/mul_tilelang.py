"""mul on TileLang: out = a * b (float32/float16/bfloat16, float32 math for
16-bit types, rounded once, as torch.mul); an instance of the elementwise
layer (flat, row-bias [M, N] * [N], other layouts staged through the
workspace; out may be a or b itself)."""

from operator_runtime.tilelang_authoring import F32, Binary


def mul(a, b):
    return a * b


MUL = Binary("mul", mul, compute=F32, commutative=True)
plan, variants = MUL.plan, MUL.variants
