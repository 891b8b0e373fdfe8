/*
 * wdirac.h: public interface of the wdirac library (C11, usable from C++).
 *
 * Conventions (DESIGN.md): lattice extents X, Y, Z, T, each even and >= 4;
 * host fields are complex double, interleaved (re, im), in the order
 *   gauge  [t][z][y][x][mu][row][col]   spinor [t][z][y][x][spin][colour]
 * with spinors in the DeGrand-Rossi basis.
 *
 * Every function returns a wd_status; on failure wd_last_error() gives a
 * message naming the cause.  No function exits or aborts.
 *
 * The externally accessible functions are
 *   wd_status_string     short text of a status code
 *   wd_last_error        the message of the last failure on this thread
 *   wd_check_dims        validate lattice extents
 *   wd_variant_count_built / wd_variant_name  the Dslash variants this build has
 *   wd_dslash_cpu        apply a named variant on the CPU backend to host fields
 */
#ifndef WDIRAC_H
#define WDIRAC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wd_status {
    WD_OK = 0,
    WD_ERR_INVALID = 1,     /* bad argument: extents, names, parameters */
    WD_ERR_NOMEM = 2,       /* host or device allocation failed */
    WD_ERR_NOT_BUILT = 3,   /* the variant exists but this build left it out */
    WD_ERR_IO = 4,          /* file could not be read or written */
    WD_ERR_CORRUPT = 5,     /* data failed a checksum or consistency check */
    WD_ERR_CUDA = 6,        /* a CUDA call failed */
    WD_ERR_NO_DEVICE = 7,   /* no usable GPU */
    WD_ERR_INTERNAL = 8
} wd_status;

/* Precision: bytes per stored real. */
typedef enum wd_precision {
    WD_PREC_DOUBLE = 8,
    WD_PREC_SINGLE = 4,
    WD_PREC_HALF = 2
} wd_precision;

/* Gauge reconstruction: reals stored per link. */
typedef enum wd_recon {
    WD_RECON_18 = 18,
    WD_RECON_12 = 12,
    WD_RECON_8 = 8
} wd_recon;

/* Time boundary condition of the fermion field: the sign of a hop across it. */
typedef enum wd_time_bc {
    WD_TIME_PERIODIC = 1,
    WD_TIME_ANTIPERIODIC = -1
} wd_time_bc;

const char *wd_status_string(wd_status s);
const char *wd_last_error(void);

/* WD_OK when every extent is even and >= 4 and V/2 fits an int. */
wd_status wd_check_dims(const int dims[4]);

int wd_variant_count_built(void);
/* name of built variant i (0 <= i < count), NULL otherwise */
const char *wd_variant_name(int i);

/*
 * Apply Dslash variant `name` on the CPU backend to host fields:
 *   out(n) = (D in)(n)  (or D^dagger, or x(n) + a (D in)(n) for xpay variants)
 * for every site n of parity `parity`; out is left untouched on the other
 * parity, in is read only on the other parity, x only on `parity`.
 * The gauge field is packed into the variant's precision and reconstruction
 * (and, for gauge-fixed variants, must already be in the temporal gauge of
 * DESIGN.md: every U_t with t < T-1 the unit matrix, checked to 1e-10).
 * Spinors are converted to the internal basis and back.  `pad` is the
 * padding (in elements) between field sub-arrays.
 */
wd_status wd_dslash_cpu(const char *name, double *out, const double *gauge,
                        const double *in, const double *x, double a,
                        const int dims[4], int parity, wd_time_bc tbc, int pad);

#ifdef __cplusplus
}
#endif

#endif
