// The optional _tensor_access extension: tensor_access.h's reads done on
// the tensor's C++ object, a few nanoseconds each where the Python calls
// fast_call.c would otherwise make take tens to hundreds. It is built against
// one torch (C++ ABI): library.py loads it only under the torch it was
// built for (TORCH_BUILD).
#include "tensor_access.h"

#include <c10/core/GradMode.h>
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

const oprt_tensor_access kAccess = {data_ptr, version, requires_grad, is_neg, grad_enabled, bump_version};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_tensor_access", nullptr, -1, nullptr, nullptr, nullptr, nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__tensor_access() {
  PyObject* module = PyModule_Create(&module_def);
  if (module == nullptr) return nullptr;
  PyObject* api = PyCapsule_New(const_cast<oprt_tensor_access*>(&kAccess), OPRT_TENSOR_ACCESS_CAPSULE, nullptr);
  const bool added = api != nullptr && PyModule_AddObjectRef(module, "api", api) == 0 &&
                     PyModule_AddStringConstant(module, "TORCH_BUILD", OPRT_TORCH_BUILD) == 0;
  Py_XDECREF(api);
  if (!added) Py_CLEAR(module);
  return module;
}
