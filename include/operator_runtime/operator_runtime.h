/*
 * operator_runtime: the public C ABI shared by every backend.
 *
 * Each operator <op> and backend <b> exports four functions, plus a string
 * naming the op's arguments:
 *
 *   oprt_create_<op>_descriptor_ex_<b>(&desc, out_view, input_views..., params...)
 *   oprt_get_<op>_workspace_size_<b>(desc, &bytes)
 *   oprt_execute_<op>_<b>(desc, workspace, workspace_bytes, out, inputs..., stream)
 *   oprt_destroy_<op>_descriptor_<b>(desc)
 *   oprt_<op>_signature_<b>()   e.g. "tensor src, int32_t dim"
 *
 * The op's header ops/<op>/<op>_api.h states its arguments once, as
 *   #define OPRT_ARGS_<op>(INPUT, PARAM) INPUT(src) PARAM(int32_t, dim)
 * (input tensors in order, then scalar parameters), and OPRT_DECLARE_OP(<op>, <b>)
 * below expands that list into the prototypes.
 *
 * oprt_create_<op>_descriptor_<b> (no _ex) is the same create under the seed
 * project's name. Where the seed exported that name with other arguments
 * (reduce_sum and softmax took an int64_t axis), it keeps the seed's
 * arguments, stated in the op's header as OPRT_SEED_ARGS_<op>, and maps them
 * onto the _ex form; see OPRT_CREATE_ARGS below.
 *
 * create binds shapes, strides, dtypes and parameters (the views' data
 * pointers are ignored); execute takes data pointers, workspace and stream
 * only. Every function returns an oprt_status_t; after a failure,
 * oprt_last_error() on the same thread says why.
 */
#ifndef OPERATOR_RUNTIME_H_
#define OPERATOR_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define OPRT_API __declspec(dllexport)
#else
#define OPRT_API __attribute__((visibility("default")))
#endif

#define OPRT_MAX_DIMS 8

typedef enum {
  OPRT_DTYPE_F16 = 0,
  OPRT_DTYPE_F32 = 1,
  OPRT_DTYPE_BF16 = 2,
  OPRT_DTYPE_F64 = 3,
} oprt_dtype_t;

typedef enum {
  OPRT_STATUS_SUCCESS = 0,
  OPRT_STATUS_NULL_POINTER = 1,           /* a required pointer argument is NULL */
  OPRT_STATUS_INVALID_ARGUMENT = 2,       /* a parameter (dim, flag, count) is out of range */
  OPRT_STATUS_UNSUPPORTED_DTYPE = 3,      /* unknown dtype code, or one this op/backend lacks */
  OPRT_STATUS_BAD_SHAPE = 4,              /* ndim out of range, negative size, shape mismatch, overflow */
  OPRT_STATUS_BAD_STRIDES = 5,            /* strides this op refuses (e.g. an output that overlaps itself) */
  OPRT_STATUS_INVALID_DESCRIPTOR = 6,     /* not a live handle of this op/backend (see oprt_descriptor_t) */
  OPRT_STATUS_INSUFFICIENT_WORKSPACE = 7, /* workspace NULL or smaller than get_workspace_size said */
  OPRT_STATUS_DEVICE_UNAVAILABLE = 8,     /* the backend cannot run in this process (no device, no driver) */
  OPRT_STATUS_BACKEND_ERROR = 9,          /* the device runtime reported an error (e.g. a CUDA error) */
  OPRT_STATUS_OUT_OF_MEMORY = 10,
  OPRT_STATUS_NOT_IMPLEMENTED = 11,
  OPRT_STATUS_INTERNAL_ERROR = 12,
} oprt_status_t;

/* A strided view of a tensor. Strides are counted in elements, not bytes. */
typedef struct {
  void* data;
  int32_t dtype; /* an oprt_dtype_t code */
  int32_t ndim;  /* 0..OPRT_MAX_DIMS */
  int64_t shape[OPRT_MAX_DIMS];
  int64_t strides[OPRT_MAX_DIMS];
} oprt_tensor_view_t;

/* Opaque descriptor handle; each (op, backend) pair has its own concrete type.
 *
 * A handle is a value issued by create, not a pointer: never dereference it.
 * Every function that takes one checks it against a process-wide table before
 * touching any descriptor, so a handle that is NULL, destroyed (also twice),
 * never issued (forged or corrupted bits) or of another op or backend is
 * refused with OPRT_STATUS_INVALID_DESCRIPTOR (oprt_descriptor_variant returns
 * NULL), without reading freed memory. A handle value is never issued twice
 * in a process, so a destroyed handle stays invalid after its memory and
 * table slot are reused. At most 2^24 descriptors are live at once (create
 * then fails with OPRT_STATUS_OUT_OF_MEMORY).
 *
 * Threads: create, get_workspace_size, execute, destroy and
 * oprt_descriptor_variant may be called concurrently from any threads, on
 * the same or on different handles, with one exception: destroying a handle
 * while another thread still uses it (any call with that handle, or the
 * string oprt_descriptor_variant returned) is a caller error; the other call
 * may then be refused or may read the descriptor while it is freed. Two
 * concurrent destroys of one handle are safe: one succeeds, the other is
 * refused. Concurrent executes of one handle read its descriptor only; each
 * needs its own workspace and out. Looking a handle up takes no lock;
 * create and destroy take a short one. */
typedef struct oprt_descriptor* oprt_descriptor_t;

/* Argument list builders for OPRT_ARGS_<op>(INPUT, PARAM): each expands one
 * argument with a leading comma, so a list follows `out` directly. */
#define OPRT_ARG_VIEW(name) , const oprt_tensor_view_t* name
#define OPRT_ARG_DATA(name) , const void* name
#define OPRT_ARG_PARAM(type, name) , type name
#define OPRT_ARG_NAME(name) , name
#define OPRT_ARG_PARAM_NAME(type, name) , name
#define OPRT_ARG_NONE(...)
#define OPRT_ARG_VIEW_TEXT(name) "tensor " #name ", "
#define OPRT_ARG_PARAM_TEXT(type, name) #type " " #name ", "

/* OPRT_HAS_SEED_ARGS(op): 1 when the op's header defines OPRT_SEED_ARGS_<op>,
 * else 0. The probe turns the list's first INPUT into "~, 1," so the second
 * item is 1; an undefined OPRT_SEED_ARGS_<op>(...) stays one item. */
#define OPRT_PP_SECOND(first, second, ...) second
#define OPRT_PP_SECOND_OF(...) OPRT_PP_SECOND(__VA_ARGS__)
#define OPRT_PP_SEED_PROBE(name) ~, 1,
#define OPRT_HAS_SEED_ARGS(op) OPRT_PP_SECOND_OF(OPRT_SEED_ARGS_##op(OPRT_PP_SEED_PROBE, OPRT_ARG_NONE), 0, ~)
#define OPRT_PP_IF(condition) OPRT_PP_IF_(condition)
#define OPRT_PP_IF_(condition) OPRT_PP_IF_##condition
#define OPRT_PP_IF_0(yes, no) no
#define OPRT_PP_IF_1(yes, no) yes

/* The argument list macro of oprt_create_<op>_descriptor_<b>: the seed's where
 * the op states one, else the full OPRT_ARGS_<op>. */
#define OPRT_CREATE_ARGS(op) OPRT_PP_IF(OPRT_HAS_SEED_ARGS(op))(OPRT_SEED_ARGS_##op, OPRT_ARGS_##op)

/* A seed axis (int64_t) as the int32_t dim of the full create; one that does
 * not fit becomes INT32_MIN, which every create refuses as out of range. */
static inline int32_t oprt_seed_dim(int64_t axis) {
  return axis == (int64_t)(int32_t)axis ? (int32_t)axis : INT32_MIN;
}

/* The entry points of op <op> on backend <b>. */
#define OPRT_DECLARE_OP(op, b)                                                             \
  OPRT_API oprt_status_t oprt_create_##op##_descriptor_ex_##b(                             \
      oprt_descriptor_t* desc,                                                             \
      const oprt_tensor_view_t* out OPRT_ARGS_##op(OPRT_ARG_VIEW, OPRT_ARG_PARAM));        \
  OPRT_API oprt_status_t oprt_create_##op##_descriptor_##b(                                \
      oprt_descriptor_t* desc,                                                             \
      const oprt_tensor_view_t* out OPRT_CREATE_ARGS(op)(OPRT_ARG_VIEW, OPRT_ARG_PARAM));  \
  OPRT_API oprt_status_t oprt_get_##op##_workspace_size_##b(oprt_descriptor_t desc,        \
                                                            size_t* workspace_bytes);      \
  OPRT_API oprt_status_t oprt_execute_##op##_##b(                                          \
      oprt_descriptor_t desc, void* workspace, size_t workspace_bytes,                     \
      void* out OPRT_ARGS_##op(OPRT_ARG_DATA, OPRT_ARG_NONE), void* stream);               \
  OPRT_API oprt_status_t oprt_destroy_##op##_descriptor_##b(oprt_descriptor_t desc);       \
  OPRT_API const char* oprt_##op##_signature_##b(void);

/* The version of the ABI this header describes. It changes whenever an
 * exported function, type or constant changes incompatibly. */
#define OPRT_ABI_VERSION 1

/* The ABI version the library was built with (OPRT_ABI_VERSION of its header):
 * a caller built against another version must not call anything else. */
OPRT_API int oprt_abi_version(void);

/* A static, human-readable name for a status code ("OPRT_STATUS_BAD_SHAPE"). */
OPRT_API const char* oprt_status_string(oprt_status_t status);

/* The message of the last failing call on this thread ("" if none). */
OPRT_API const char* oprt_last_error(void);

/* The kernel variant the descriptor chose at create (e.g. "contiguous"), or
 * NULL for an invalid handle. Valid until the descriptor is destroyed. */
OPRT_API const char* oprt_descriptor_variant(oprt_descriptor_t desc);

/* OPRT_STATUS_SUCCESS when backend <b> can run in this process; otherwise a
 * status and oprt_last_error() saying why. One per backend:
 * oprt_backend_probe_cpu(), oprt_backend_probe_nvidia(), ... */
OPRT_API oprt_status_t oprt_backend_probe_cpu(void);

#ifdef __cplusplus
}
#endif

#endif /* OPERATOR_RUNTIME_H_ */
