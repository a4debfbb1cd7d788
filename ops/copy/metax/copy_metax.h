/* The MetaX (MACA) backend of copy: a stub. This header declares the four
 * entry points a port has to define. Nothing in this folder is compiled: the
 * build only globs the cpu/ (.cc) and nvidia/ (.cu) folders of each op, so the
 * library exports none of these yet. README.md next to this file lists what a
 * port needs. */
#ifndef OPRT_COPY_METAX_H_
#define OPRT_COPY_METAX_H_
#include "../copy_api.h"
#ifdef __cplusplus
extern "C" {
#endif
OPRT_DECLARE_COPY_API(metax)
#ifdef __cplusplus
}
#endif
#endif
