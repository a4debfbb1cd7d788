/* The MetaX (MACA) backend of softmax: a stub. This header declares the four
 * entry points a port has to define. Nothing in this folder is compiled: the
 * build only globs the cpu/ (.cc) and nvidia/ (.cu) folders of each op, so the
 * library exports none of these yet. README.md next to this file lists what a
 * port needs. */
#ifndef OPRT_SOFTMAX_METAX_H_
#define OPRT_SOFTMAX_METAX_H_
#include "../softmax_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_SOFTMAX_API(metax)
#ifdef __cplusplus
}
#endif
#endif
