#ifndef OPRT_REDUCE_SUM_CPU_H_
#define OPRT_REDUCE_SUM_CPU_H_
#include "../reduce_sum_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_REDUCE_SUM_API(cpu)
#ifdef __cplusplus
}
#endif
#endif
