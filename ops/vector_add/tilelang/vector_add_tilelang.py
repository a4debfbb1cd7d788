"""vector_add on TileLang: out = a + b (float32/float16/bfloat16, float32
math for 16-bit types, rounded once); an instance of the elementwise layer
(flat, row-bias [M, N] + [N], other layouts staged through the workspace;
out may be a or b itself)."""

from operator_runtime.tilelang_authoring import F32, Binary


def add(a, b):
    return a + b


VECTOR_ADD = Binary("vector_add", add, compute=F32, commutative=True)
plan, variants = VECTOR_ADD.plan, VECTOR_ADD.variants
