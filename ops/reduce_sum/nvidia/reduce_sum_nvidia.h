#ifndef OPRT_REDUCE_SUM_NVIDIA_H_
#define OPRT_REDUCE_SUM_NVIDIA_H_
#include "../reduce_sum_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_REDUCE_SUM_API(nvidia)
#ifdef __cplusplus
}
#endif
#endif
