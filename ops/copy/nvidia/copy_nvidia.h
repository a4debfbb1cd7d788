#ifndef OPRT_COPY_NVIDIA_H_
#define OPRT_COPY_NVIDIA_H_
#include "../copy_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_COPY_API(nvidia)
#ifdef __cplusplus
}
#endif
#endif
