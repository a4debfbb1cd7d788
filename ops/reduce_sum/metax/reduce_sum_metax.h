/* The MetaX (MACA) backend of reduce_sum: a stub. This header declares the four
 * entry points a port has to define. Nothing in this folder is compiled: the
 * build only globs the cpu/ (.cc) and nvidia/ (.cu) folders of each op, so the
 * library exports none of these yet. README.md next to this file lists what a
 * port needs. */
#ifndef OPRT_REDUCE_SUM_METAX_H_
#define OPRT_REDUCE_SUM_METAX_H_
#include "../reduce_sum_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_REDUCE_SUM_API(metax)
#ifdef __cplusplus
}
#endif
#endif
