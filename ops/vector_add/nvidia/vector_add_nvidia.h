#ifndef OPRT_VECTOR_ADD_NVIDIA_H_
#define OPRT_VECTOR_ADD_NVIDIA_H_
#include "../vector_add_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_VECTOR_ADD_API(nvidia)
#ifdef __cplusplus
}
#endif
#endif
