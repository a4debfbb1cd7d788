#ifndef OPRT_VECTOR_ADD_CPU_H_
#define OPRT_VECTOR_ADD_CPU_H_
#include "../vector_add_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_VECTOR_ADD_API(cpu)
#ifdef __cplusplus
}
#endif
#endif
