// The optional _tensor_access extension: tensor_access.h's reads done on
// the tensor's C++ object, a few nanoseconds each where the Python calls
// fast_call.c would otherwise make take tens to hundreds. It is built against
// one torch (C++ ABI): library.py loads it only under the torch it was
// built for (TORCH_BUILD).
#include "tensor_access.h"

#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

namespace {

// The tensor behind a torch.Tensor (or subclass) object, or nullptr.
const at::Tensor* tensor_of(PyObject* object) {
  if (!THPVariable_Check(object)) return nullptr;
  return &THPVariable_Unpack(object);
}

int data_ptr(PyObject* object, intptr_t* address) {
  const at::Tensor* t = tensor_of(object);
  if (t == nullptr) return -1;
  try {
    *address = reinterpret_cast<intptr_t>(t->data_ptr());
    return 0;
  } catch (const std::exception&) {  // no storage (a wrapper subclass, ...): Python's data_ptr() says
    return -1;
  }
}

int version(PyObject* object, long long* value) {
  const at::Tensor* t = tensor_of(object);
  if (t == nullptr) return -1;
  try {
    *value = static_cast<long long>(t->_version());
    return 0;
  } catch (const std::exception&) {  // an inference tensor has no version counter
    return -1;
  }
}

int requires_grad(PyObject* object) {
  const at::Tensor* t = tensor_of(object);
  return t == nullptr ? -1 : t->requires_grad() ? 1 : 0;
}

int is_neg(PyObject* object) {
  const at::Tensor* t = tensor_of(object);
  return t == nullptr ? -1 : t->is_neg() ? 1 : 0;
}

int grad_enabled() { return c10::GradMode::is_enabled() ? 1 : 0; }

int bump_version(PyObject* object) {
  const at::Tensor* t = tensor_of(object);
  if (t == nullptr) return -1;
  try {
    torch::autograd::impl::bump_version(*t);
    return 0;
  } catch (const std::exception&) {  // (an inference tensor outside inference mode): Python raises it
    return -1;
  }
}

Py_ssize_t signature(PyObject* object, int64_t* words, Py_ssize_t capacity) {
  const at::Tensor* t = tensor_of(object);
  // Nested, symbolic and custom-size tensors have no plain sizes() (it throws):
  // the Python path reads them, or refuses them.
  if (t == nullptr || t->layout() != c10::kStrided || t->is_nested() ||
      t->unsafeGetTensorImpl()->has_symbolic_sizes_strides())
    return -1;
  try {
    const Py_ssize_t dims = t->dim();
    if (2 + 2 * dims > capacity) return -1;
    const c10::Device device = t->device();
    // One word for dtype and device: the scalar type and device type are small
    // enums, the index a signed byte (-1: none).
    words[0] = (static_cast<int64_t>(t->scalar_type()) << 24) | (static_cast<int64_t>(device.type()) << 8) |
               static_cast<uint8_t>(device.index());
    words[1] = dims;
    const auto sizes = t->sizes();
    const auto strides = t->strides();
    for (Py_ssize_t d = 0; d < dims; ++d) {
      words[2 + d] = sizes[d];
      words[2 + dims + d] = strides[d];
    }
    return 2 + 2 * dims;
  } catch (const std::exception&) {
    return -1;
  }
}

// Python's torch.empty_like passes through torch function and dispatch
// modes, which may return another kind of tensor: with one active, Python
// makes the call.
PyObject* empty_like(PyObject* object) {
  const at::Tensor* t = tensor_of(object);
  if (t == nullptr || at::impl::PythonTorchFunctionTLS::stack_len() > 0 ||
      c10::impl::TorchDispatchModeTLS::any_modes_set())
    return nullptr;
  PyObject* result = nullptr;
  try {
    result = THPVariable_Wrap(at::empty_like(*t));
  } catch (const std::exception&) {  // Python's call gives torch's own error
  }
  if (result == nullptr) PyErr_Clear();
  return result;
}

const oprt_tensor_access kAccess = {data_ptr, version,      requires_grad, is_neg,
                                    grad_enabled, bump_version, signature, empty_like};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_tensor_access", nullptr, -1, nullptr, nullptr, nullptr, nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__tensor_access() {
  PyObject* module = PyModule_Create(&module_def);
  if (module == nullptr) return nullptr;
  PyObject* api = PyCapsule_New(const_cast<oprt_tensor_access*>(&kAccess), OPRT_TENSOR_ACCESS_CAPSULE, nullptr);
  const bool added = api != nullptr && PyModule_AddObjectRef(module, "api", api) == 0 &&
                     PyModule_AddStringConstant(module, "TORCH_BUILD", OPRT_TORCH_BUILD) == 0 &&
                     PyModule_AddIntConstant(module, "INTERFACE", OPRT_TENSOR_ACCESS_INTERFACE) == 0;
  Py_XDECREF(api);
  if (!added) Py_CLEAR(module);
  return module;
}
