/* The per-call fast path of Operator.call (operator.py) in C.
 *
 * A repeated op(x) / op_(out, x) call costs a few microseconds of Python
 * bytecode and a ctypes call before the kernel launch; here the same steps
 * run as C: build the call's signature key, find its _CallEntry, allocate or
 * check out, and call the op's C execute entry point directly. operator.py
 * stays the definition: it builds each entry's `native` record, and this
 * module serves only entries that have one (a C descriptor without a
 * workspace). Anything else returns to Python:
 *
 *   call(op, out, inputs, params, backend) ->
 *     a tensor  the call ran;
 *     a tuple   the signature key (no entry, no native record, another
 *               device current, an overlapping out, ...): Python goes on
 *               with its own fast path from that key;
 *     None      the arguments have no key (not tensors, unhashable
 *               params): Python's slow path says what is wrong.
 *
 * Where it reads tensors through Python, the key is exactly the tuple
 * operator.py's call() builds; through _tensor_access, the tensors'
 * dtypes, shapes, strides and devices are packed into one bytes object
 * instead, which is equal for exactly the same calls and several times
 * cheaper to build (tests/test_fast_path.py compares both with Python's).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "tensor_access.h"

typedef int (*Execute1)(void*, void*, size_t, void*, void*, void*);
typedef int (*Execute2)(void*, void*, size_t, void*, void*, void*, void*);
typedef int (*Execute3)(void*, void*, size_t, void*, void*, void*, void*, void*);

enum { kMaxInputs = 3 };

/* The version of this module's interface to operator.py (configure's
 * arguments, the records it reads): operator.py ignores a module built from
 * other sources, as a stale build folder may hold. */
enum { kInterface = 3 };

/* Set once by configure(). */
static PyObject* calls;           /* the descriptor cache's call map: key -> _CallEntry */
static PyObject* tensor_type;     /* torch.Tensor */
static PyObject* empty_like;      /* torch.empty_like */
static PyObject* raw_stream;      /* index -> current cudaStream_t (int), or None */
static PyObject* current_device;  /* () -> current CUDA device index, or None */
static PyObject* parameter_type;  /* torch.nn.Parameter */
static PyObject* grad_enabled;    /* torch.is_grad_enabled */
static PyObject* bump_version;    /* torch._C._increment_version (an iterable of tensors) */

/* Set by set_tensor_access(): direct reads of a tensor's state, or NULL
 * (each read is then a Python call). */
static const oprt_tensor_access* tensor_reads;

static PyObject *s_dtype, *s_shape, *s_stride, *s_device, *s_data_ptr, *s_handle, *s_used, *s_native,
    *s_new_out, *s_check, *s_is_neg, *s_version, *s_requires_grad;

/* A new reference's truth as a flag (1 or 0; -1 when it is NULL: an error). */
static int take_flag(PyObject* value) {
  if (value == NULL) return -1;
  const int flag = value == Py_True;
  Py_DECREF(value);
  return flag;
}

/* Whether autograd would have to record a call on t: t requires grad and
 * grad mode is on (Python then refuses it, or runs the registered operator).
 * 1: yes, 0: no, -1: error. */
static int needs_grad(PyObject* t) {
  int required = tensor_reads ? tensor_reads->requires_grad(t) : -1;
  if (required < 0) required = take_flag(PyObject_GetAttr(t, s_requires_grad));
  if (required <= 0) return required;
  return tensor_reads ? tensor_reads->grad_enabled() : take_flag(PyObject_CallNoArgs(grad_enabled));
}

/* tuple(map(type, params)), plus each tuple param's element types when a
 * param is a tuple (operator.py's _param_types). */
static PyObject* param_types(PyObject* params) {
  const Py_ssize_t n = PyTuple_GET_SIZE(params);
  Py_ssize_t extra = 0;
  for (Py_ssize_t i = 0; i < n; ++i) extra += Py_IS_TYPE(PyTuple_GET_ITEM(params, i), &PyTuple_Type);
  PyObject* types = PyTuple_New(n + extra);
  if (types == NULL) return NULL;
  Py_ssize_t at = n;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* p = PyTuple_GET_ITEM(params, i);
    PyObject* type = (PyObject*)Py_TYPE(p);
    Py_INCREF(type);
    PyTuple_SET_ITEM(types, i, type);
    if (!extra || !Py_IS_TYPE(p, &PyTuple_Type)) continue;
    const Py_ssize_t m = PyTuple_GET_SIZE(p);
    PyObject* inner = PyTuple_New(m);
    if (inner == NULL) {
      Py_DECREF(types);
      return NULL;
    }
    for (Py_ssize_t j = 0; j < m; ++j) {
      PyObject* t = (PyObject*)Py_TYPE(PyTuple_GET_ITEM(p, j));
      Py_INCREF(t);
      PyTuple_SET_ITEM(inner, j, t);
    }
    PyTuple_SET_ITEM(types, at++, inner);
  }
  return types;
}

/* Whether t may take the fast path: 1 yes; 0 for a tensor the slow path
 * must see: torch's negative bit (it has a plain tensor's signature; the
 * slow path resolves or refuses it), a subclass (fake tensors and the like
 * take the registered operator) or a gradient to record; -1 on error. */
static int plain_tensor(PyObject* t) {
  if (Py_TYPE(t) != (PyTypeObject*)tensor_type && Py_TYPE(t) != (PyTypeObject*)parameter_type) return 0;
  const int grad = needs_grad(t);
  if (grad != 0) return grad < 0 ? -1 : 0;
  int negative = tensor_reads ? tensor_reads->is_neg(t) : -1;
  if (negative < 0) negative = take_flag(PyObject_CallMethodNoArgs(t, s_is_neg));
  return negative < 0 ? -1 : !negative;
}

/* Puts t's dtype, shape, stride() and device at key[at..at+3]. -1 (with or
 * without an exception) when t has no fast-path key (plain_tensor). */
static int put_signature(PyObject* key, Py_ssize_t at, PyObject* t) {
  if (plain_tensor(t) <= 0) return -1;
  PyObject* dtype = PyObject_GetAttr(t, s_dtype);
  if (dtype == NULL) return -1;
  PyTuple_SET_ITEM(key, at, dtype);
  PyObject* shape = PyObject_GetAttr(t, s_shape);
  if (shape == NULL) return -1;
  PyTuple_SET_ITEM(key, at + 1, shape);
  PyObject* stride = PyObject_CallMethodNoArgs(t, s_stride);
  if (stride == NULL) return -1;
  PyTuple_SET_ITEM(key, at + 2, stride);
  PyObject* device = PyObject_GetAttr(t, s_device);
  if (device == NULL) return -1;
  PyTuple_SET_ITEM(key, at + 3, device);
  return 0;
}

enum { kSignedDims = 16, kSignatureWords = 2 + 2 * kSignedDims };

/* The inputs' and out's signatures read through tensor_reads, packed into
 * one bytes object (each tensor's words begin with its dim count, so the
 * packing is unambiguous). NULL with no exception where Python reads them
 * instead (more inputs or dims than fit, no tensor_reads); NULL with
 * *slow set when a tensor has no fast-path key. */
static PyObject* packed_signatures(PyObject* out, PyObject* inputs, int* slow) {
  const Py_ssize_t n = PyTuple_GET_SIZE(inputs);
  if (tensor_reads == NULL || n > kMaxInputs) return NULL;
  int64_t words[(kMaxInputs + 1) * kSignatureWords];
  Py_ssize_t used = 0;
  for (Py_ssize_t i = 0; i <= n; ++i) {
    PyObject* t = i < n ? PyTuple_GET_ITEM(inputs, i) : out;
    if (t == Py_None) break;
    const int plain = plain_tensor(t);
    if (plain <= 0) {
      *slow = 1;
      return NULL;
    }
    const Py_ssize_t count = tensor_reads->signature(t, words + used, kSignatureWords);
    if (count < 0) return NULL;
    used += count;
  }
  return PyBytes_FromStringAndSize((const char*)words, used * (Py_ssize_t)sizeof(int64_t));
}

/* The call's signature key: (op, backend, params, types, then the tensors'
 * signatures), these as one bytes object of packed_signatures or, where
 * Python reads them, as dtype, shape, stride() and device per input and out
 * (out's unless it is None): the tuple operator.py's call() builds. NULL
 * (with or without an exception) where the arguments have no key. */
static PyObject* call_key(PyObject* op, PyObject* out, PyObject* inputs, PyObject* params, PyObject* backend) {
  if (!PyTuple_CheckExact(inputs) || !PyTuple_CheckExact(params)) return NULL;
  const Py_ssize_t n = PyTuple_GET_SIZE(inputs);
  int slow = 0;
  PyObject* packed = packed_signatures(out, inputs, &slow);
  if (packed == NULL && (slow || PyErr_Occurred())) return NULL;
  PyObject* types = PyTuple_GET_SIZE(params) ? param_types(params) : PyTuple_New(0);
  PyObject* key = types ? PyTuple_New(4 + (packed ? 1 : 4 * n + (out == Py_None ? 0 : 4))) : NULL;
  if (key == NULL) {
    Py_XDECREF(types);
    Py_XDECREF(packed);
    return NULL;
  }
  Py_INCREF(op);
  PyTuple_SET_ITEM(key, 0, op);
  Py_INCREF(backend);
  PyTuple_SET_ITEM(key, 1, backend);
  Py_INCREF(params);
  PyTuple_SET_ITEM(key, 2, params);
  PyTuple_SET_ITEM(key, 3, types);
  if (packed) {
    PyTuple_SET_ITEM(key, 4, packed);
    return key;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (put_signature(key, 4 + 4 * i, PyTuple_GET_ITEM(inputs, i)) < 0) goto fail;
  }
  if (out != Py_None && put_signature(key, 4 + 4 * n, out) < 0) goto fail;
  return key;
fail:
  Py_DECREF(key);  /* unset slots are NULL, which tuple dealloc skips */
  return NULL;
}

/* t.data_ptr() as an address; -1 with an exception set on failure. */
static int data_ptr(PyObject* t, intptr_t* address) {
  if (tensor_reads && tensor_reads->data_ptr(t, address) == 0) return 0;
  PyObject* value = PyObject_CallMethodNoArgs(t, s_data_ptr);
  if (value == NULL) return -1;
  *address = (intptr_t)PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  return PyErr_Occurred() ? -1 : 0;
}

/* callable() or callable(arg) as a C integer; -1 with an exception set on failure. */
static int int_result(PyObject* callable, PyObject* arg, long long* value) {
  PyObject* result = arg ? PyObject_CallOneArg(callable, arg) : PyObject_CallNoArgs(callable);
  if (result == NULL) return -1;
  *value = PyLong_AsLongLong(result);
  Py_DECREF(result);
  return PyErr_Occurred() ? -1 : 0;
}

/* Whether a given out overlaps an input in a way the slow path refuses
 * (operator.py: entry.spans). 1: yes, 0: no, -1: error. */
static int overlaps(PyObject* record_out_span, PyObject* spans, PyObject* out, PyObject* inputs) {
  intptr_t out_ptr;
  if (data_ptr(out, &out_ptr) < 0) return -1;
  const long long o0 = out_ptr + PyLong_AsLongLong(PyTuple_GET_ITEM(record_out_span, 0));
  const long long o1 = out_ptr + PyLong_AsLongLong(PyTuple_GET_ITEM(record_out_span, 1));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(spans); ++i) {
    PyObject* span = PyTuple_GET_ITEM(spans, i);  /* (index, lo, hi, same) */
    intptr_t ptr;
    if (data_ptr(PyTuple_GET_ITEM(inputs, PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0))), &ptr) < 0) return -1;
    const long long lo = ptr + PyLong_AsLongLong(PyTuple_GET_ITEM(span, 1));
    const long long hi = ptr + PyLong_AsLongLong(PyTuple_GET_ITEM(span, 2));
    const int same = PyTuple_GET_ITEM(span, 3) == Py_True;
    if (lo < o1 && o0 < hi && !(same && ptr == out_ptr)) return 1;
  }
  return PyErr_Occurred() ? -1 : 0;
}

/* Whether t's version counter reads `recorded` (an int; None for an
 * inference tensor, which has no counter: never the same). 1, 0, or -1. */
static int version_is(PyObject* t, PyObject* recorded) {
  if (recorded == Py_None) return 0;
  long long version;
  if (tensor_reads && tensor_reads->version(t, &version) == 0) {
    const long long value = PyLong_AsLongLong(recorded);
    return value == -1 && PyErr_Occurred() ? -1 : value == version;
  }
  PyObject* current = PyObject_GetAttr(t, s_version);
  if (current == NULL) return -1;
  const int same = PyObject_RichCompareBool(current, recorded, Py_EQ);
  Py_DECREF(current);
  return same;
}

/* Whether a prepared op's tensors are as they were at prepare
 * (operator.py: PreparedOp._bound_state says why this check suffices): per
 * tensor, the same data pointer, and the same version counter or else the
 * same shape and strides. Fills pointers[] with the recorded pointers, which
 * the launch may take where the state says so. 1: unchanged, 0: changed,
 * -1: error. */
static int bound_unchanged(PyObject* state, Py_ssize_t n, intptr_t* pointers, int* have_pointers) {
  const Py_ssize_t count = PyTuple_GET_SIZE(state) - 1;
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = PyTuple_GET_ITEM(state, 1 + i);  /* [tensor, data pointer, version, shape, strides] */
    if (!PyList_CheckExact(item) || PyList_GET_SIZE(item) != 5) {
      PyErr_SetString(PyExc_TypeError, "run: a bound state item is [tensor, pointer, version, shape, strides]");
      return -1;
    }
    PyObject* t = PyList_GET_ITEM(item, 0);
    intptr_t ptr;
    if (data_ptr(t, &ptr) < 0) return -1;
    const intptr_t recorded = (intptr_t)PyLong_AsVoidPtr(PyList_GET_ITEM(item, 1));
    if (ptr != recorded) return PyErr_Occurred() ? -1 : 0;
    if (i <= n) pointers[i] = ptr;
    int same = version_is(t, PyList_GET_ITEM(item, 2));
    if (same < 0) return -1;
    if (same) continue;
    PyObject* shape = PyObject_GetAttr(t, s_shape);
    if (shape == NULL) return -1;
    same = PyObject_RichCompareBool(shape, PyList_GET_ITEM(item, 3), Py_EQ);
    Py_DECREF(shape);
    if (same <= 0) return same;
    PyObject* stride = PyObject_CallMethodNoArgs(t, s_stride);
    if (stride == NULL) return -1;
    same = PyObject_RichCompareBool(stride, PyList_GET_ITEM(item, 4), Py_EQ);
    Py_DECREF(stride);
    if (same <= 0) return same;
  }
  *have_pointers = count == 1 + n && PyTuple_GET_ITEM(state, 0) == Py_True;
  return 1;
}

/* After a write into a given out: its version counter bumped, so autograd
 * sees the write, and a prepared op's bound state told the new version
 * (operator.py: PreparedOp._wrote). 0, or -1 with an exception. */
static int wrote(PyObject* out, PyObject* state) {
  if (!tensor_reads || tensor_reads->bump_version(out) < 0) {
    PyObject* tensors = PyTuple_Pack(1, out);
    if (tensors == NULL) return -1;
    PyObject* done = PyObject_CallOneArg(bump_version, tensors);
    Py_DECREF(tensors);
    if (done == NULL) return -1;
    Py_DECREF(done);
  }
  if (state == NULL) return 0;
  PyObject* version = NULL;
  for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(state); ++i) {
    PyObject* item = PyTuple_GET_ITEM(state, i);  /* checked by bound_unchanged */
    if (PyList_GET_ITEM(item, 0) != out || PyList_GET_ITEM(item, 2) == Py_None) continue;
    if (version == NULL) {
      long long value;
      version = tensor_reads && tensor_reads->version(out, &value) == 0 ? PyLong_FromLongLong(value)
                                                              : PyObject_GetAttr(out, s_version);
      if (version == NULL) return -1;
    }
    Py_INCREF(version);
    if (PyList_SetItem(item, 2, version) < 0) {  /* steals version, releases the old one */
      Py_DECREF(version);
      return -1;
    }
  }
  Py_XDECREF(version);
  return 0;
}

/* Runs a native record: (descriptor, execute address, slot or None, like,
 * cuda index, out span, spans, workspace address, workspace bytes); see
 * operator.py's native_record(). state: a prepared op's bound state, checked
 * first, or NULL. Returns out, NULL with an exception, or Py_None to hand
 * back to Python (nothing was run). */
static PyObject* run_record(PyObject* entry, PyObject* record, PyObject* out, PyObject* inputs, PyObject* state) {
  PyObject* descriptor = PyTuple_GET_ITEM(record, 0);
  const Py_ssize_t n = PyTuple_GET_SIZE(inputs);
  if (n < 1 || n > kMaxInputs) return Py_None;
  PyObject* handle_object = PyObject_GetAttr(descriptor, s_handle);
  if (handle_object == NULL) return NULL;
  void* handle = handle_object == Py_None ? NULL : PyLong_AsVoidPtr(handle_object);
  Py_DECREF(handle_object);
  if (handle == NULL) return PyErr_Occurred() ? NULL : Py_None;  /* destroyed: Python makes a new one */
  void* execute = PyLong_AsVoidPtr(PyTuple_GET_ITEM(record, 1));
  const long cuda_index = PyLong_AsLong(PyTuple_GET_ITEM(record, 4));
  void* workspace = PyLong_AsVoidPtr(PyTuple_GET_ITEM(record, 7));
  const size_t workspace_bytes = PyLong_AsSize_t(PyTuple_GET_ITEM(record, 8));
  if (PyErr_Occurred()) return NULL;
  void* stream = NULL;
  if (cuda_index >= 0) {
    long long current, raw;
    if (current_device == Py_None || raw_stream == Py_None) return Py_None;
    if (int_result(current_device, NULL, &current) < 0) return NULL;
    if (current != cuda_index) return Py_None;  /* Python switches devices around the launch */
    if (int_result(raw_stream, PyTuple_GET_ITEM(record, 4), &raw) < 0) return NULL;
    stream = (void*)(intptr_t)raw;
  }
  const int given = out != Py_None;
  if (!given) {
    const long like = PyLong_AsLong(PyTuple_GET_ITEM(record, 3));
    PyObject* source = like >= 0 ? PyTuple_GET_ITEM(inputs, like) : NULL;
    if (source != NULL && Py_TYPE(source) == (PyTypeObject*)tensor_type) {  /* a subclass may override it */
      out = tensor_reads ? tensor_reads->empty_like(source) : NULL;
      if (out == NULL) out = PyObject_CallOneArg(empty_like, source);
    } else {
      out = PyObject_CallMethodNoArgs(entry, s_new_out);
    }
    if (out == NULL) return NULL;
    if (Py_TYPE(out) != (PyTypeObject*)tensor_type) {  /* a dispatch mode made it: Python routes the call */
      Py_DECREF(out);
      return Py_None;
    }
  } else if (PyTuple_GET_SIZE(PyTuple_GET_ITEM(record, 6))) {
    const int overlap = overlaps(PyTuple_GET_ITEM(record, 5), PyTuple_GET_ITEM(record, 6), out, inputs);
    if (overlap != 0) return overlap < 0 ? NULL : Py_None;  /* Python's path raises the overlap error */
    Py_INCREF(out);
  } else {
    Py_INCREF(out);
  }
  intptr_t pointers[1 + kMaxInputs];
  int have_pointers = 0;
  if (state != NULL) {
    const int unchanged = bound_unchanged(state, n, pointers, &have_pointers);
    if (unchanged <= 0) {  /* changed: Python re-binds or refuses */
      Py_DECREF(out);
      return unchanged < 0 ? NULL : Py_None;
    }
  }
  if (!have_pointers) {
    if (data_ptr(out, &pointers[0]) < 0) goto fail;
    for (Py_ssize_t i = 0; i < n; ++i)
      if (data_ptr(PyTuple_GET_ITEM(inputs, i), &pointers[1 + i]) < 0) goto fail;
  }
  PyObject* slot = PyTuple_GET_ITEM(record, 2);
  if (slot != Py_None && PyObject_SetAttr(slot, s_used, Py_True) < 0) goto fail;
  int status;
  Py_BEGIN_ALLOW_THREADS  /* as a ctypes call does: a CPU kernel may run long */
  switch (n) {
    case 1:
      status = ((Execute1)execute)(handle, workspace, workspace_bytes, (void*)pointers[0], (void*)pointers[1], stream);
      break;
    case 2:
      status = ((Execute2)execute)(handle, workspace, workspace_bytes, (void*)pointers[0], (void*)pointers[1], (void*)pointers[2],
                                   stream);
      break;
    default:
      status = ((Execute3)execute)(handle, workspace, workspace_bytes, (void*)pointers[0], (void*)pointers[1], (void*)pointers[2],
                                   (void*)pointers[3], stream);
      break;
  }
  Py_END_ALLOW_THREADS
  if (status != 0) {  /* descriptor.check raises the library's error */
    PyObject* code = PyLong_FromLong(status);
    PyObject* checked = code ? PyObject_CallMethodOneArg(descriptor, s_check, code) : NULL;
    Py_XDECREF(code);
    if (checked == NULL) goto fail;
    Py_DECREF(checked);
  }
  if (given && wrote(out, state) < 0) goto fail;
  return out;
fail:
  Py_DECREF(out);
  return NULL;
}

static PyObject* fast_call(PyObject* Py_UNUSED(module), PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "call(op, out, inputs, params, backend)");
    return NULL;
  }
  PyObject *op = args[0], *out = args[1], *inputs = args[2], *params = args[3], *backend = args[4];
  if (calls == NULL) Py_RETURN_NONE;
  PyObject* key = call_key(op, out, inputs, params, backend);
  if (key == NULL) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  PyObject* entry = PyDict_GetItemWithError(calls, key);  /* borrowed */
  if (entry == NULL) {
    if (PyErr_Occurred()) {  /* unhashable params */
      PyErr_Clear();
      Py_DECREF(key);
      Py_RETURN_NONE;
    }
    return key;
  }
  Py_INCREF(entry);  /* another thread may evict it meanwhile */
  PyObject* record = PyObject_GetAttr(entry, s_native);
  PyObject* result = NULL;
  if (record != NULL) {
    result = PyTuple_CheckExact(record) ? run_record(entry, record, out, inputs, NULL) : Py_None;
    Py_DECREF(record);
  }
  Py_DECREF(entry);
  if (result == Py_None) return key;
  Py_DECREF(key);
  return result;
}

/* run(record, out, inputs, state): a prepared op's launch (operator.py
 * PreparedOp.run), state its bound state or None: out, or None when Python
 * must launch it (a bound tensor changed, another device current, ...). */
static PyObject* fast_run(PyObject* Py_UNUSED(module), PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4 || !PyTuple_CheckExact(args[0]) || args[1] == Py_None || !PyTuple_CheckExact(args[2]) ||
      (args[3] != Py_None && (!PyTuple_CheckExact(args[3]) || PyTuple_GET_SIZE(args[3]) < 1))) {
    PyErr_SetString(PyExc_TypeError, "run(record, out, inputs, state)");
    return NULL;
  }
  /* A gradient to record: Python refuses it. */
  int grad = needs_grad(args[1]);
  for (Py_ssize_t i = 0; grad == 0 && i < PyTuple_GET_SIZE(args[2]); ++i) grad = needs_grad(PyTuple_GET_ITEM(args[2], i));
  if (grad != 0) {
    if (grad < 0) return NULL;
    Py_RETURN_NONE;
  }
  PyObject* result = run_record(NULL, args[0], args[1], args[2], args[3] == Py_None ? NULL : args[3]);
  if (result == Py_None) Py_RETURN_NONE;
  return result;
}

static PyObject* configure(PyObject* Py_UNUSED(module), PyObject* args) {
  PyObject *c, *t, *e, *r, *d, *p, *g, *v;
  if (!PyArg_ParseTuple(args, "O!OOOOOOO:configure", &PyDict_Type, &c, &t, &e, &r, &d, &p, &g, &v)) return NULL;
  Py_INCREF(p);
  Py_INCREF(g);
  Py_INCREF(v);
  Py_XSETREF(parameter_type, p);
  Py_XSETREF(grad_enabled, g);
  Py_XSETREF(bump_version, v);
  Py_INCREF(c);
  Py_INCREF(t);
  Py_INCREF(e);
  Py_INCREF(r);
  Py_INCREF(d);
  Py_XSETREF(calls, c);
  Py_XSETREF(tensor_type, t);
  Py_XSETREF(empty_like, e);
  Py_XSETREF(raw_stream, r);
  Py_XSETREF(current_device, d);
  Py_RETURN_NONE;
}

/* set_tensor_access(capsule or None): the _tensor_access extension's reads,
 * or none (Python calls). */
static PyObject* set_tensor_access(PyObject* Py_UNUSED(module), PyObject* capsule) {
  if (capsule == Py_None) {
    tensor_reads = NULL;
    Py_RETURN_NONE;
  }
  const oprt_tensor_access* api = PyCapsule_GetPointer(capsule, OPRT_TENSOR_ACCESS_CAPSULE);
  if (api == NULL) return NULL;
  tensor_reads = api;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"call", (PyCFunction)(void (*)(void))fast_call, METH_FASTCALL,
     "call(op, out, inputs, params, backend): out, the signature key, or None (see fast_call.c)"},
    {"run", (PyCFunction)(void (*)(void))fast_run, METH_FASTCALL, "run(record, out, inputs, state): out, or None"},
    {"configure", configure, METH_VARARGS,
     "configure(calls, torch.Tensor, torch.empty_like, raw_stream or None, current_device or None, "
     "torch.nn.Parameter, torch.is_grad_enabled, torch._C._increment_version)"},
    {"set_tensor_access", set_tensor_access, METH_O,
     "set_tensor_access(capsule or None): read tensors through _tensor_access's api, or through Python"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_fast_call", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast_call(void) {
  const char* names[] = {"dtype", "shape", "stride", "device", "data_ptr", "_handle", "used", "native", "new_out",
                         "check", "is_neg", "_version", "requires_grad"};
  PyObject** slots[] = {&s_dtype, &s_shape,  &s_stride, &s_device, &s_data_ptr, &s_handle,
                        &s_used,  &s_native, &s_new_out, &s_check, &s_is_neg, &s_version, &s_requires_grad};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    *slots[i] = PyUnicode_InternFromString(names[i]);
    if (*slots[i] == NULL) return NULL;
  }
  PyObject* module = PyModule_Create(&module_def);
  if (module != NULL && (PyModule_AddIntConstant(module, "MAX_INPUTS", kMaxInputs) < 0 ||
                         PyModule_AddIntConstant(module, "INTERFACE", kInterface) < 0))
    Py_CLEAR(module);
  return module;
}
