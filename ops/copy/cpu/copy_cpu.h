#ifndef OPRT_COPY_CPU_H_
#define OPRT_COPY_CPU_H_
#include "../copy_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_COPY_API(cpu)
#ifdef __cplusplus
}
#endif
#endif
