/*
 * wdirac_npy.h: spinor fields in NumPy .npy files (spinor_npy.c).
 *
 * A spinor file holds one host spinor field of DESIGN.md: dtype complex128,
 * C order, shape (T, Z, Y, X, 4, 3), so that element [t, z, y, x, spin,
 * colour] is the host field's [t][z][y][x][spin][colour] in the
 * DeGrand-Rossi basis, and any Python user reads it with numpy.load.
 *
 * The externally accessible functions are
 *   wd_npy_read_spinor     read a spinor file into a newly allocated field,
 *                          checking the header (magic, version 1.0, 2.0 or
 *                          3.0, descr '<c16' or '>c16', fortran_order
 *                          False, shape), the data size and that every
 *                          value is finite
 *   wd_npy_write_spinor    write a field as a version 1.0 file ('<c16' on
 *                          a little-endian host), safely: a temporary file
 *                          beside the target, fsync, then link (no
 *                          overwrite) or rename into place
 *   wd_npy_check_writable  would a write to this path succeed: refuses an
 *                          existing file without overwrite, and creates
 *                          and removes a temporary file beside it
 *   wd_npy_write_propagator_block  a propagator, (T, Z, Y, X, 4, 3, 4, 3)
 *   wd_npy_read_spinor_block / wd_npy_write_spinor_block   the same files
 *                          on a process grid (wdirac.h's wd_lattice): rank
 *                          0 reads or writes, one time slice at a time
 *
 * Status codes: a missing or unreadable file, or one that cannot be
 * written, is WD_ERR_IO; a file that is not a well-formed .npy (magic,
 * version, header syntax, size, NaN or Inf) is WD_ERR_CORRUPT; a
 * well-formed .npy that is not a spinor of the lattice asked for (dtype,
 * order, shape, extents) is WD_ERR_INVALID.  Every message names the file
 * and the field.  No function exits or aborts, and a failed write leaves
 * any existing file as it was and no temporary file behind.
 */
#ifndef WDIRAC_NPY_H
#define WDIRAC_NPY_H

#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Read the spinor file at path into *psi, newly allocated (24 V doubles;
 * release it with free()).  With expect_dims (X, Y, Z, T) non-NULL a file
 * of another shape is refused, naming the expected and the found shape;
 * dims (may be NULL) receives the X, Y, Z, T found.  On failure *psi is
 * left as it was and nothing stays allocated.
 */
wd_status wd_npy_read_spinor(const char *path, const int expect_dims[4], double **psi,
                             int dims[4]);

/*
 * Write the host spinor psi (24 V doubles, V = X Y Z T) to path.  A field
 * holding NaN or Inf is refused (WD_ERR_INVALID: its reader would refuse
 * the file).  Without overwrite an existing path is refused (WD_ERR_IO)
 * and never replaced, even when it appears while the file is written.
 */
wd_status wd_npy_write_spinor(const char *path, const double *psi, const int dims[4],
                              int overwrite);

/* WD_OK when wd_npy_write_spinor(path, ..., overwrite) could create path:
 * for a command to check before a long computation, not after it. */
wd_status wd_npy_check_writable(const char *path, int overwrite);

/*
 * On a process grid, collective (every rank calls with the same path and
 * lattice, its own block; every rank gets the same status and message):
 * rank 0 opens and checks the file as wd_npy_read_spinor does with
 * expect_dims = lat->dims, reads one time slice at a time and sends each
 * rank its part.  psi_block (24 doubles a site of lat->local, allocated by
 * the caller) is written only when the whole file has passed (no NaN or
 * Inf anywhere): on failure it is untouched.  Memory: each rank its block
 * twice while reading, rank 0 one time slice on top.
 */
wd_status wd_npy_read_spinor_block(const char *path, const wd_lattice *lat, double *psi_block);

/*
 * wd_npy_write_spinor on a process grid, collective: NaN or Inf in any
 * block is refused on every rank (naming the global element); rank 0
 * writes the file safely while every rank sends it its part of each time
 * slice in turn.  The bytes are those of wd_npy_write_spinor for the whole
 * field.  overwrite is rank 0's.
 */
wd_status wd_npy_write_spinor_block(const char *path, const double *psi_block,
                                    const wd_lattice *lat, int overwrite);

/*
 * A propagator (wdirac_physics.h: 144 complex a site, sink spin and colour
 * before source spin and colour) into a .npy of shape (T, Z, Y, X, 4, 3,
 * 4, 3) complex128, written as wd_npy_write_spinor_block writes a spinor:
 * collective, rank 0 writing safely one time slice at a time; NaN or Inf
 * anywhere refused on every rank.  On one process lat is the whole lattice
 * (wd_lattice_make with NULL).
 */
wd_status wd_npy_write_propagator_block(const char *path, const double *prop_block,
                                        const wd_lattice *lat, int overwrite);

#ifdef __cplusplus
}
#endif

#endif
