#ifndef OPRT_SOFTMAX_NVIDIA_H_
#define OPRT_SOFTMAX_NVIDIA_H_
#include "../softmax_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_SOFTMAX_API(nvidia)
#ifdef __cplusplus
}
#endif
#endif
