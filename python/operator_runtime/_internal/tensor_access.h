/* Direct reads of a torch tensor's state for fast_call.c, served by the
 * optional _tensor_access extension (tensor_access.cc, C++ built against the
 * installed torch). Each function stands in for a Python attribute or
 * method call on the per-call path; one that cannot answer (a tensor
 * without storage, a torch error) returns -1 with no exception set, and
 * fast_call.c asks Python instead, which gives the real answer or error. */
#ifndef OPRT_TENSOR_ACCESS_H_
#define OPRT_TENSOR_ACCESS_H_

#include <Python.h>
#include <stdint.h>

/* The version of the table below: library.py loads only a module of the
 * version it expects (a stale build folder may hold an older one). */
#define OPRT_TENSOR_ACCESS_INTERFACE 2
#define OPRT_TENSOR_ACCESS_CAPSULE "operator_runtime._internal._tensor_access.api"

typedef struct {
  int (*data_ptr)(PyObject* tensor, intptr_t* address);  /* t.data_ptr(): 0, or -1 */
  int (*version)(PyObject* tensor, long long* version);  /* t._version: 0, or -1 */
  int (*requires_grad)(PyObject* tensor);                 /* 1, 0, or -1 */
  int (*is_neg)(PyObject* tensor);                        /* 1, 0, or -1 */
  int (*grad_enabled)(void);                              /* torch.is_grad_enabled(): 1 or 0 */
  int (*bump_version)(PyObject* tensor);                  /* torch._C._increment_version((t,)): 0, or -1 */
  /* t's dtype, device, shape and strides as words[0 .. n) (n returned; -1
   * when they do not fit in capacity words or t has no plain strided
   * layout: nested, symbolic or custom sizes):
   * two tensors give equal words exactly when their (dtype, shape, stride(),
   * device) tuples are equal. */
  Py_ssize_t (*signature)(PyObject* tensor, int64_t* words, Py_ssize_t capacity);
  /* torch.empty_like(t) as a new reference, or NULL with no exception set
   * where Python must call it (a torch function or dispatch mode is active,
   * a torch error). */
  PyObject* (*empty_like)(PyObject* tensor);
} oprt_tensor_access;

#endif
