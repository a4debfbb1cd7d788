#ifndef OPRT_SOFTMAX_CPU_H_
#define OPRT_SOFTMAX_CPU_H_
#include "../softmax_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_SOFTMAX_API(cpu)
#ifdef __cplusplus
}
#endif
#endif
