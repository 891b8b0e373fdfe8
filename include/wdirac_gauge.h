/*
 * wdirac_gauge.h: gauge configurations: the quenched SU(3) Monte Carlo
 * generator (CPU), gauge observables, and NERSC / ILDG-LIME files.
 *
 * Fields are host gauge fields of DESIGN.md: 4 V links of 18 doubles,
 * order [t][z][y][x][mu][row][col], (re, im) interleaved (the memory of
 * double complex), V = X Y Z T, every extent even and >= 4.
 * Every function returns a wd_status; on failure wd_last_error() names the
 * cause (the file and the field).  No function exits or aborts.
 *
 * The externally accessible functions are
 *   wd_gauge_init         cold (every link 1) or hot (Haar-random links from
 *                         Philox keyed by the seed) start
 *   wd_gauge_heatbath_sweep   one compound sweep: a Cabibbo-Marinari heatbath
 *                         of every link, n_or overrelaxation sweeps, then
 *                         every link reunitarized
 *   wd_gauge_overrelax_sweep  overrelaxation sweeps alone (action-preserving)
 *   wd_gauge_observables  plaquette, link trace, Polyakov loop
 *   wd_gauge_gpu_*        the compound sweep on the GPU
 *   wd_gauge_write_defaults  the write options below
 *   wd_gauge_write        write a NERSC or ILDG file, safely
 *   wd_gauge_read         read a NERSC or ILDG file (format from its first
 *                         bytes), checking everything it can
 *   wd_gauge_read_nersc / wd_gauge_read_ildg   the same for one format
 *   wd_gauge_read_header  the header alone: format, extents, what it states
 * and on a process grid (wdirac.h's wd_lattice; each collective over every
 * rank, each rank passing its block; docs/multi-gpu.md, "Files and the
 * heatbath on a grid"):
 *   wd_gauge_init_block, wd_gauge_heatbath_sweep_block,
 *   wd_gauge_overrelax_sweep_block, wd_gauge_observables_block
 *                         the functions above on the blocks, bit for bit
 *                         the same field and observables as one process
 *   wd_gauge_read_block   rank 0 reads and checks the file, every rank gets
 *                         its block, one time slice at a time
 *   wd_gauge_write_block  rank 0 writes the file the blocks make, the same
 *                         bytes wd_gauge_write writes for the whole field
 *
 * Reproducibility: a sweep's random numbers are a function of (seed,
 * sweep_index, site, mu, subgroup, draw) (heatbath_link.h), so the same
 * seed and sweep indices give the same field bit for bit for any number
 * of OpenMP threads; observables are summed in a fixed order, so they too
 * are independent of the thread count.  On a process grid the Philox
 * counters are keyed by the global site index and the observables are
 * summed in the single-process order, so a decomposed run gives the same
 * bits as one process.
 */
#ifndef WDIRAC_GAUGE_H
#define WDIRAC_GAUGE_H

#include <stdint.h>

#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wd_gauge_start {
    WD_START_COLD = 0,  /* every link the unit matrix */
    WD_START_HOT = 1    /* every link Haar-random */
} wd_gauge_start;

wd_status wd_gauge_init(double *u, const int dims[4], wd_gauge_start start, uint64_t seed);

/*
 * One compound sweep of the Wilson gauge action at coupling beta > 0: the
 * heatbath over every link, ordered by (mu, parity) checkerboard (all
 * links U_mu(x) of one parity are independent given the rest, so each
 * checkerboard is updated in parallel), then n_or >= 0 overrelaxation
 * sweeps in the same order, then every link reunitarized.  sweep_index
 * (< 2^63) selects the random numbers: use 0, 1, 2, ... for a run.
 * WD_ERR_INTERNAL (the field updated) if an SU(2) sampler gave up after
 * its 256 attempts, which skips that subgroup update (never seen: each
 * attempt is accepted with probability >= 0.69).
 */
wd_status wd_gauge_heatbath_sweep(double *u, const int dims[4], double beta, uint64_t seed,
                            uint64_t sweep_index, int n_or);

/* n_or >= 1 overrelaxation sweeps alone (no random numbers, no beta: the
 * Wilson action is unchanged up to rounding), then every link reunitarized. */
wd_status wd_gauge_overrelax_sweep(double *u, const int dims[4], int n_or);

typedef struct wd_gauge_obs {
    double plaquette;        /* Re tr P / 3 averaged over the 6 V plaquettes */
    double plaquette_space;  /* over the 3 V plaquettes in (x,y), (x,z), (y,z) */
    double plaquette_time;   /* over the 3 V plaquettes with one t side */
    double link_trace;       /* Re tr U / 3 averaged over the 4 V links */
    double poly_re, poly_im; /* tr(U_t(x,0) ... U_t(x,T-1)) / 3 averaged over x */
} wd_gauge_obs;

wd_status wd_gauge_observables(const double *u, const int dims[4], wd_gauge_obs *obs);

/*
 * The same Monte Carlo on the GPU (heatbath_gpu.cu): open copies a host
 * field over (one field per process), each sweep is wd_gauge_heatbath_sweep's
 * compound sweep with the same random numbers, *ms its time from CUDA
 * events, fetch copies the field back.  WD_ERR_NO_DEVICE in builds
 * without CUDA.
 */
wd_status wd_gauge_gpu_open(const double *u, const int dims[4]);
wd_status wd_gauge_gpu_sweep(double beta, uint64_t seed, uint64_t sweep_index, int n_or,
                             double *ms);
wd_status wd_gauge_gpu_fetch(double *u);
void wd_gauge_gpu_close(void);

/* ---- on a process grid ------------------------------------------------- */

/*
 * The functions above on a process grid: lat from wd_lattice_make, u_block
 * this rank's block (72 doubles a site of lat->local, the order of
 * DESIGN.md within the block).  Each is collective: every rank calls it
 * with the same arguments but its own block, and every rank gets the same
 * status and message (a failure of one rank is agreed by wd_comm_agree
 * before the next collective call).  Checks and messages are those of the
 * single-process function; a lattice made for another rank or number of
 * ranks is WD_ERR_INVALID.  The sweeps and the hot start key their random
 * numbers by the global site index, and the sweeps exchange the border
 * links with the neighbours after every (mu, parity) checkerboard, so the
 * field is the one a single process makes from the same seed and sweep
 * indices, bit for bit.  The observables add their terms in the order of
 * wd_gauge_observables (partial sums travel along X and T between ranks,
 * rank 0 adds the rows and lines), so they too equal one process's bits.
 * Memory: a sweep holds a copy of the block with one layer of border links
 * around it; the observables hold the forward border faces.
 */
wd_status wd_gauge_init_block(double *u_block, const wd_lattice *lat, wd_gauge_start start,
                              uint64_t seed);
wd_status wd_gauge_heatbath_sweep_block(double *u_block, const wd_lattice *lat, double beta,
                                        uint64_t seed, uint64_t sweep_index, int n_or);
wd_status wd_gauge_overrelax_sweep_block(double *u_block, const wd_lattice *lat, int n_or);
wd_status wd_gauge_observables_block(const double *u_block, const wd_lattice *lat,
                                     wd_gauge_obs *obs);

/* ---- files ------------------------------------------------------------- */

typedef enum wd_gauge_format {
    WD_GAUGE_NERSC = 1,
    WD_GAUGE_ILDG = 2
} wd_gauge_format;

typedef struct wd_gauge_write_opts {
    wd_gauge_format format;  ///< default WD_GAUGE_NERSC
    int precision;           ///< bits per stored real, 32 or 64; default 64
    int two_row;             ///< NERSC: 1 = 4D_SU3_GAUGE (rows 0 and 1 stored),
                             ///< 0 = 4D_SU3_GAUGE_3x3; default 0.  ILDG: must be 0
    int little_endian;       ///< NERSC: 1 = IEEE32LITTLE/IEEE64LITTLE; default 0
                             ///< (big endian).  ILDG is big endian: must be 0
    int overwrite;           ///< replace an existing file; default 0 (refuse)
    const char *ensemble_id; ///< NERSC ENSEMBLE_ID; default "wdirac"
    uint32_t sequence_number;///< NERSC SEQUENCE_NUMBER; default 0
} wd_gauge_write_opts;

wd_gauge_write_opts wd_gauge_write_defaults(void);

/*
 * Write u to path.  The field must be finite and SU(3) to 1e-9 (else
 * WD_ERR_INVALID: a file that its own reader would refuse is not written).
 * The file is written to a temporary name in the same directory, flushed
 * to disk (fsync), then renamed to path: an interrupted write leaves any
 * existing file as it was.  Without overwrite an existing path is refused
 * (WD_ERR_IO) before anything is written, and never replaced.
 * NERSC headers carry DIMENSION_1..4, CHECKSUM, PLAQUETTE, LINK_TRACE,
 * BOUNDARY_1..4 = PERIODIC, FLOATING_POINT; ILDG files carry the records
 * ildg-format, ildg-binary-data, scidac-checksum and wdirac-info (the
 * plaquette and link trace, checked by wd_gauge_read when present).
 * CREATION_DATE and ARCHIVE_DATE are the time of writing, or the time in
 * the environment variable SOURCE_DATE_EPOCH (seconds since 1970) when it
 * holds one, for files that must compare byte for byte.
 */
wd_status wd_gauge_write(const char *path, const double *u, const int dims[4],
                         const wd_gauge_write_opts *opts);

/* What a read found, filled as far as the reader got (also on failure). */
typedef struct wd_gauge_info {
    wd_gauge_format format;
    int dims[4];
    int precision;            /* bits per stored real: 32 or 64 */
    int rows;                 /* rows stored per link: 2 or 3 */
    int big_endian;
    char datatype[64];        /* NERSC DATATYPE or ILDG field */
    char floating_point[32];  /* NERSC FLOATING_POINT; "IEEE32BIG"/"IEEE64BIG" for ILDG */
    char boundary[4][32];     /* NERSC BOUNDARY_1..4 ("" when absent) */
    char ensemble_id[128];    /* NERSC ENSEMBLE_ID ("" when absent) */
    int has_checksum;         /* NERSC CHECKSUM present */
    uint32_t checksum_header, checksum_data;
    int has_scidac;           /* ILDG scidac-checksum record present */
    uint32_t suma_header, sumb_header, suma_data, sumb_data;
    int has_plaquette;        /* PLAQUETTE (NERSC) or wdirac-info (ILDG) present */
    double plaquette_header;
    int has_link_trace;
    double link_trace_header;
    int data_read;            /* the fields below are valid */
    double unitarity;         /* max over links of |U U^dag - 1| and |det U - 1|
                               * of the stored data (two-row: after rebuilding
                               * row 2); infinite for a NaN */
    wd_gauge_obs obs;         /* of the field as read (before reunitarizing) */
    double tolerance;         /* plaquette, link-trace tolerance used */
    double unitarity_tolerance;
} wd_gauge_info;

/* flags for wd_gauge_read */
enum {
    /* Report rather than refuse: checksum, plaquette, link-trace and
     * unitarity mismatches and non-finite links are recorded in info and
     * the read returns WD_OK (for `wdirac gauge info`).  Malformed headers,
     * wrong sizes and truncation still fail. */
    WD_GAUGE_READ_REPORT_ONLY = 1
};

/*
 * Read the configuration in path into a newly allocated field *u (4 V 18
 * doubles; release it with free()) and fill *info (may be NULL).  With
 * expect_dims non-NULL, a file of other extents is refused
 * (WD_ERR_INVALID, naming the DIMENSION).  On failure *u is left as it
 * was and nothing is allocated.
 *
 * Checks, each failure WD_ERR_CORRUPT with the file and field named:
 * header syntax and known DATATYPE / FLOATING_POINT / ildg-format, valid
 * extents, the data size against the file size (truncated or oversized),
 * the NERSC CHECKSUM (32-bit sum of the 32-bit words of the data: of the
 * IEEE bit patterns, the value the writer summed whatever its byte
 * order), the scidac-checksum (when present), PLAQUETTE and LINK_TRACE
 * (when present; tolerance 1e-6 for 64-bit data, 1e-5 for 32-bit),
 * finiteness, and unitarity (1e-9 for 64-bit, 1e-5 for 32-bit data).
 * A missing or unreadable file is WD_ERR_IO.
 *
 * 64-bit 3x3 data are returned bit for bit as stored; two-row data get row
 * 2 = (row0 x row1)^*; 32-bit data are reunitarized in double after the
 * checks.  NERSC FLOATING_POINT IEEE32 and IEEE64 without BIG/LITTLE are
 * read as big endian (the archive's original meaning); when the checksum
 * fails that way and holds little endian, little endian is taken.
 */
wd_status wd_gauge_read(const char *path, const int expect_dims[4], unsigned flags,
                        double **u, wd_gauge_info *info);
wd_status wd_gauge_read_nersc(const char *path, const int expect_dims[4], unsigned flags,
                              double **u, wd_gauge_info *info);
wd_status wd_gauge_read_ildg(const char *path, const int expect_dims[4], unsigned flags,
                             double **u, wd_gauge_info *info);

/* The header of a NERSC or ILDG file alone: format, extents, precision and
 * what the header states (checksums, plaquette, link trace), checked as
 * wd_gauge_read checks them before reading the data (info->data_read 0).
 * Needs no MPI: each rank may ask, e.g. to size its block on a grid. */
wd_status wd_gauge_read_header(const char *path, wd_gauge_info *info);

/*
 * wd_gauge_read on a process grid, collective: rank 0 opens the file, tells
 * the format, checks the header and the size against lat->dims (another
 * extent is WD_ERR_INVALID naming the DIMENSION, as expect_dims does), then
 * reads the data one time slice at a time and sends each rank its part of
 * the slice.  The checksums (NERSC CHECKSUM, scidac-checksum) are summed by
 * rank 0 over the whole file as it reads; finiteness, unitarity, plaquette
 * and link trace are checked on the blocks, over the whole lattice.
 * Every rank gets the same status, message and *info (may be NULL).  The
 * data land in a block-sized buffer of each rank and are copied into
 * u_block (72 doubles a site of lat->local, allocated by the caller) only
 * when every check has passed: on failure u_block is untouched.  Memory:
 * each rank its block twice while reading; rank 0 one time slice of the
 * file as stored and as doubles on top.
 */
wd_status wd_gauge_read_block(const char *path, const wd_lattice *lat, unsigned flags,
                              double *u_block, wd_gauge_info *info);

/*
 * wd_gauge_write on a process grid, collective: the unitarity check, the
 * plaquette and link trace over the whole lattice (the bits of one
 * process), the NERSC checksum from every rank's partial sum; then rank 0
 * writes the file through the same safe write (temporary file, fsync, link
 * or rename) while every rank sends it its part of each time slice in
 * turn.  The bytes are those wd_gauge_write writes for the whole field, for
 * every option (NERSC headers carry the date: set SOURCE_DATE_EPOCH for
 * files to compare byte for byte).  Every rank passes the same opts.
 * Memory: rank 0 one time slice as doubles and a buffer of 1024 stored
 * sites on top of its block.
 */
wd_status wd_gauge_write_block(const char *path, const double *u_block, const wd_lattice *lat,
                               const wd_gauge_write_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
