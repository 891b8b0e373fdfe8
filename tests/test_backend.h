/*
 * test_backend.h: the --backend option the solver-backend tests share.
 *
 *   test_backend_arg   the backend named by --backend cpu|cuda (default
 *                      cpu); exits 77 (meson's skip) when that backend is
 *                      not built or has no device (through
 *                      wd_backend_probe: on several ranks collective,
 *                      each rank on its own GPU)
 */
#ifndef WDIRAC_TEST_BACKEND_H
#define WDIRAC_TEST_BACKEND_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wd_backend.h"

static inline wd_backend_kind test_backend_arg(int argc, char **argv)
{
    wd_backend_kind kind = WD_BACKEND_CPU;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--backend"))
            kind = strcmp(argv[i + 1], "cuda") ? WD_BACKEND_CPU : WD_BACKEND_CUDA;
    const wd_status st = wd_backend_probe(kind);
    if (st == WD_ERR_NOT_BUILT || st == WD_ERR_NO_DEVICE) {
        printf("SKIP: %s\n", wd_last_error());
        exit(77);
    }
    return kind;
}

#endif
