/*
 * fuzz_nersc.c: libFuzzer harness for the NERSC reader
 * (runtime/io/gauge_io_nersc.c), run by tests/run_fuzz.sh or the meson
 * `fuzz` suite (-Dfuzz=true, clang).
 *
 * The externally accessible function is
 *   LLVMFuzzerTestOneInput   read the input as a NERSC file from memory
 *                            (fmemopen), lattices of at most 4096 sites,
 *                            strict or report-only by the last byte; free
 *                            what a successful read allocated
 * Any crash, sanitizer report or leak is a failure; error returns are not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gauge_io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!f)
        return 0;
    double *u = NULL;
    wd_gauge_info info;
    const unsigned flags = (data[size - 1] & 1) ? WD_GAUGE_READ_REPORT_ONLY : 0;
    if (wd_nersc_read_stream(f, "fuzz-input", NULL, flags, 4096, &u, &info) == WD_OK)
        free(u);
    fclose(f);
    return 0;
}
