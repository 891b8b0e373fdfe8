/*
 * lattice.c: the geometry of a lattice (DESIGN.md, Physics conventions).
 *
 * The externally accessible functions are
 *   wd_check_dims   WD_OK when every extent is even and >= 4 and the
 *                   checkerboard volume fits 32-bit site indices
 *   wd_volume       X*Y*Z*T
 */
#include <limits.h>

#include "wd_core.h"

wd_status wd_check_dims(const int dims[4])
{
    static const char axis[] = "XYZT";
    long long v = 1;
    for (int mu = 0; mu < 4; ++mu) {
        if (dims[mu] < 4 || dims[mu] % 2)
            return wd_fail(WD_ERR_INVALID, "lattice extent %c = %d: every extent must be even and >= 4",
                           axis[mu], dims[mu]);
        v *= dims[mu];
    }
    if (v / 2 + 65536 > INT_MAX)
        return wd_fail(WD_ERR_INVALID, "lattice %dx%dx%dx%d: %lld sites is too many for 32-bit site indices",
                       dims[0], dims[1], dims[2], dims[3], v);
    return WD_OK;
}

size_t wd_volume(const int dims[4])
{
    return (size_t)dims[0] * (size_t)dims[1] * (size_t)dims[2] * (size_t)dims[3];
}
