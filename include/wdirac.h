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
 *   wd_volume            X*Y*Z*T
 *   wd_spinor_fill_random  a random host spinor from a seed (test sources),
 *                        and one block of it (_block)
 *   wd_init / wd_finalize  start and stop the processes' communication (MPI)
 *   wd_rank / wd_ranks   this process and how many there are
 *   wd_lattice_make      a lattice on a process grid: this rank's block
 *   wd_agree             every rank's status -> one status on all of them
 *   wd_variant_count_built / wd_variant_name  the Dslash variants this build has
 *   wd_dslash_cpu        apply a named variant on the CPU backend to host fields
 *   wd_backend_probe     can this process use a backend (a GPU for CUDA)
 *   wd_solver_default_settings  the default settings of wd_solve
 *   wd_solve             solve M x = b (even-odd preconditioned CG or BiCGstab,
 *                        pure or mixed precision) in one call
 *   wd_solver_create / wd_solver_solve / wd_solver_destroy
 *                        the same with the gauge field uploaded once and kept
 *                        on the backend for any number of solves
 *   wd_solver_solve_many many right-hand sides at once: lock-step Krylov
 *                        solves sharing each operator application (the
 *                        multi-RHS kernels load every link once for up to
 *                        4 right-hand sides)
 */
#ifndef WDIRAC_H
#define WDIRAC_H

#include <stddef.h>
#include <stdint.h>

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
    WD_ERR_INTERNAL = 8,
    WD_ERR_DIVERGED = 9,    /* a solver's residual grew without bound or it broke down */
    WD_ERR_STAGNATED = 10,  /* a solver's true residual stopped decreasing */
    WD_ERR_NAN = 11,        /* a solver met NaN or Inf */
    WD_ERR_MAX_ITER = 12    /* a solver reached its iteration limit */
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
size_t wd_volume(const int dims[4]);

/* ---------------------------------------------------------------------- */
/* Many processes (runtime/comm/, docs/multi-gpu.md)                         */

/* Start MPI when this build has it and nobody started it yet; call it
 * first, with main's argc and argv (or NULLs).  A build without MPI, or a
 * program started without mpirun, is one process and works as before.
 * wd_finalize stops MPI if wd_init started it. */
wd_status wd_init(int *argc, char ***argv);
void wd_finalize(void);
/* This process's rank and the number of ranks (0 and 1 before wd_init). */
int wd_rank(void);
int wd_ranks(void);

/*
 * A lattice split over a process grid.  Rank px + Px*(py + Py*(pz + Pz*pt))
 * holds the block of local extents dims / procs starting at global site
 * origin; with more than one rank every host field a function of this
 * header takes or returns (gauge, spinors) is that rank's block: local
 * extents, the global order of DESIGN.md within the block.  Parity is the
 * parity of global coordinates.
 */
typedef struct wd_lattice {
    int dims[4];    /* global extents X, Y, Z, T */
    int procs[4];   /* the process grid Px, Py, Pz, Pt */
    int local[4];   /* this rank's block */
    int origin[4];  /* global coordinates of the block's first site */
    int rank, size; /* this rank, Px Py Pz Pt */
} wd_lattice;

/* The lattice dims on the grid procs (NULL or all zero: the automatic grid,
 * splitting T first, then Z, Y, X, keeping every local extent even and
 * >= 4) for this process among wd_ranks().  WD_ERR_INVALID naming the
 * dimension when procs does not divide dims, a local extent is odd or
 * below 4, or the product of procs is not wd_ranks(); every rank gets the
 * same answer (no communication). */
wd_status wd_lattice_make(wd_lattice *lat, const int dims[4], const int procs[4]);

/* Collective: every rank passes its status and gets back WD_OK if all
 * passed WD_OK, else the status of the lowest failing rank, with that
 * rank's message ("rank R: ..." on the others).  For callers that must take
 * the same branch on every rank (before a collective call, or an exit). */
wd_status wd_agree(wd_status st);

/* Fill the host spinor psi (24 V doubles) with complex normal components
 * (E|z|^2 = 1) drawn site by site in host order from `seed`: the same field
 * for the same seed on any machine and thread count (up to libm's last bits). */
wd_status wd_spinor_fill_random(double *psi, const int dims[4], uint64_t seed);
/* This rank's block of the same field (24 doubles a site of lat->local):
 * the draws of the whole lattice are made, in host order, and the block's
 * kept (time O(V), memory the block). */
wd_status wd_spinor_fill_random_block(double *psi_block, const wd_lattice *lat, uint64_t seed);

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

/* ---------------------------------------------------------------------- */
/* Solvers (runtime/numerics/solver.c)                                              */

typedef enum wd_backend_kind {
    WD_BACKEND_CPU = 0,
    WD_BACKEND_CUDA = 1     /* WD_ERR_NO_DEVICE without a GPU or in a build without CUDA */
} wd_backend_kind;

/* WD_OK when this process can open a backend of this kind (CPU: always;
 * CUDA: a usable GPU in a build with CUDA), else the reason
 * (WD_ERR_NO_DEVICE, WD_ERR_CUDA) with its message.  With several ranks
 * (wd_ranks() > 1) a CUDA probe is collective: every rank first takes the
 * GPU of its place on its node, the one its process grid will run on. */
wd_status wd_backend_probe(wd_backend_kind kind);

typedef enum wd_solver_type {
    WD_SOLVER_CG = 1,       /* CG on the normal equations Mhat^dag Mhat x = Mhat^dag b */
    WD_SOLVER_BICGSTAB = 2, /* BiCGstab on Mhat x = b */
    WD_SOLVER_MG = 3        /* flexible GCR on M x = b preconditioned by the multigrid
                             * cycle that wd_solver_mg_setup built (runtime/multigrid/) */
} wd_solver_type;

/* How the sloppy (inner) iteration is kept on track by the outer precision
 * (Clark et al. section 5).  With sloppy == outer precision this still
 * applies: reliable updates then are Sleijpen and van der Vorst's original
 * cure for residual drift. */
typedef enum wd_mixed_method {
    WD_MIXED_NONE = 0,      /* true residual only when the iterated one reaches the target */
    WD_MIXED_RELIABLE = 1,  /* reliable updates with parameter delta (Algorithm 2) */
    WD_MIXED_DEFECT = 2     /* defect correction with inner tolerance tol_inner (Algorithm 1) */
} wd_mixed_method;

/* Precision of the partial solution accumulator, the correction x_s that
 * the sloppy iteration sums between two true-residual updates.  In the
 * sloppy precision every step rounds x_s again (half: 2^-15 of each site's
 * largest component), an error the next update turns into residual; in the
 * outer precision that error is gone at the cost of one wider field. */
typedef enum wd_accumulator {
    WD_ACCUM_AUTO = 0,      /* outer for CG (whose long recurrences suffer most), sloppy for BiCGstab */
    WD_ACCUM_SLOPPY = 1,
    WD_ACCUM_OUTER = 2
} wd_accumulator;

/* The even-odd Schur operator of the clover action (kappa normalisation,
 * M_sw / (4+m) = A - kappa D with A = 1 + c_sw T / (4+m); docs/solvers.md
 * says which converges faster where). */
typedef enum wd_clover_form {
    WD_CLOVER_SYMMETRIC = 0,    /* Mhat = 1 - kappa^2 A_ee^-1 D_eo A_oo^-1 D_oe */
    WD_CLOVER_ASYMMETRIC = 1    /* Mhat = A_ee - kappa^2 D_eo A_oo^-1 D_oe */
} wd_clover_form;

/* Called by the solver as it goes: `iterations` = k + l so far, `residual`
 * the relative residual it iterates on (CG: of the normal equations), or
 * after a true-residual check the true one of the even-odd system. */
typedef void (*wd_progress_fn)(void *arg, int iterations, double residual);

typedef struct wd_solver_settings {
    wd_solver_type solver;          ///< WD_SOLVER_BICGSTAB
    wd_backend_kind backend;        ///< WD_BACKEND_CPU
    double mass;                    ///< 0.1: the bare mass m of M = (4+m) - D/2
    wd_time_bc tbc;                 ///< WD_TIME_ANTIPERIODIC
    double csw;                     ///< 0: c_sw of the clover term (DESIGN.md, Clover); 0 is the Wilson operator
    wd_clover_form clover_form;     ///< WD_CLOVER_SYMMETRIC: the Schur form with a clover term
    double tol;                     ///< 1e-10: stop when ||b - M x|| <= tol ||b|| on the full lattice
    int max_iter;                   ///< 10000: limit on iterations k + l (reliable updates and restarts count)
    wd_precision precision;         ///< WD_PREC_DOUBLE: outer precision (source, residual, solution)
    wd_recon recon;                 ///< WD_RECON_12: outer gauge reconstruction
    int gauge_fix;                  ///< 0: outer operator on the temporal-gauge field (1) or not (0)
    wd_precision sloppy_precision;  ///< WD_PREC_SINGLE: Krylov iteration precision; == precision for a pure solve
    wd_recon sloppy_recon;          ///< WD_RECON_12
    int sloppy_gauge_fix;           ///< 0
    wd_mixed_method mixed;          ///< WD_MIXED_RELIABLE
    double delta;                   ///< 0.1: reliable update when ||r|| < delta * max ||r|| since the last one (and below ||r|| then)
    double tol_inner;               ///< 0.1: defect correction: each inner solve reduces ||r|| by this
    int max_stall;                  ///< 4: stop (WD_ERR_STAGNATED) after this many true-residual checks in a row that gain less than 10% on the best
    double divergence;              ///< 1e8: stop (WD_ERR_DIVERGED) when the iterated residual exceeds this times its value at the last update
    wd_accumulator accumulator;     ///< WD_ACCUM_AUTO: precision of the partial solution accumulator
    int pad;                        ///< 0: elements of padding after each field sub-array
    int grid[4];                    ///< {0, 0, 0, 0}: the process grid Px Py Pz Pt over wd_ranks() ranks (zeros: automatic, wd_lattice_make); with more than one rank gauge, b and x are this rank's block, and every rank calls with the same settings
    int verbosity;                  ///< 0: 1 prints a summary, 2 every true-residual check, 3 every iteration (stderr)
    wd_progress_fn progress;        ///< NULL: called after every iteration and true-residual check
    void *progress_arg;             ///< NULL: passed to progress
} wd_solver_settings;

typedef struct wd_solver_stats {
    int iterations;                 ///< k + l: Krylov iterations plus reliable updates / restarts
    int sloppy_iterations;          ///< k
    int updates;                    ///< l: true-residual updates (reliable updates, restarts, final checks)
    double true_residual;           ///< ||b - M x|| / ||b|| of the returned x, full lattice, double (host reference operator); 0 for b = 0
    double solver_residual;         ///< the same as the solver's last outer-precision check estimated it
    double seconds;                 ///< host b to host x: source gauge fixing and transfer, preparation, solve, reconstruction, transfer back (the gauge field already on the backend)
    double setup_seconds;           ///< wd_solve: wd_solver_create's share (gauge fixing, packing and uploading the gauge field); with a clover term also a solve's rebuild of the clover field for a new mass
    double solve_seconds;           ///< the Krylov iteration alone
    double flops;                   ///< operator and BLAS flops of the Krylov iteration
    double gflops;                  ///< flops / solve_seconds / 1e9
    size_t bytes_allocated;         ///< peak backend memory: fields and gauge fields of every precision
    size_t bytes_gauge;             ///< the gauge fields' share of it
    wd_status status;               ///< what the solve returned (wd_solver_solve_many: this right-hand side's status)
    int mg_levels;                  ///< WD_SOLVER_MG: the levels of the cycle (else 0); iterations counts the outer GCR's
    int mg_iterations[4];           ///< WD_SOLVER_MG: Krylov iterations on each coarse level l = 1 .. mg_levels - 1, summed over every cycle ([0]: smoother steps on the fine level)
} wd_solver_stats;

void wd_solver_default_settings(wd_solver_settings *s);

/*
 * Solve M x = b for the Wilson-Dirac operator of DESIGN.md on gauge field
 * `gauge` (host order, complex double), b and x full-lattice host spinors
 * (DeGrand-Rossi basis); x may not alias b.  Even-odd preconditioned: the
 * solver works on Mhat_ee = 1 - kappa^2 D_eo D_oe and reconstructs the odd
 * sites.  With gauge fixing on either level the whole solve runs in the
 * temporal gauge (b transformed by g, x back by g^dagger); x is the same.
 * Returns WD_OK on convergence.  WD_ERR_DIVERGED, WD_ERR_STAGNATED,
 * WD_ERR_NAN and WD_ERR_MAX_ITER still return the best iterate found in x
 * with its true residual in stats; invalid input (WD_ERR_INVALID, NaN in b
 * or the gauge field included) leaves x zero.  stats may be NULL.
 *  On a process grid (settings.grid, more than one rank) dims are the
 * global extents, gauge, b and x this rank's block (wd_lattice_make), and
 * every rank calls with the same settings: the call is collective, every
 * rank returns the same status, message and stats (residuals and norms are
 * global; gauge fixing hands the time lines from rank to rank); an invalid
 * grid returns WD_ERR_INVALID naming the dimension before anything is
 * allocated, x untouched.
 */
wd_status wd_solve(double *x, const double *gauge, const double *b, const int dims[4],
                   const wd_solver_settings *s, wd_solver_stats *stats);

/*
 * A solver for one gauge field, for many solves: wd_solver_create checks
 * the gauge field, fixes it to temporal gauge if either level asks for it,
 * and packs and uploads it in the outer and (if different) the sloppy
 * precision and reconstruction; wd_solver_solve then behaves as wd_solve
 * (same contract for x, b, the status and the stats, stats->setup_seconds
 * 0) without touching the gauge field again.  The settings given to create
 * fix what the uploaded fields depend on: backend, precision, recon,
 * gauge_fix, sloppy_precision, sloppy_recon, sloppy_gauge_fix, tbc, pad
 * and grid; each solve may change every other setting (solver, mass, tol, the
 * mixed-precision method and its parameters, progress...) and gets
 * WD_ERR_INVALID naming the setting if it changes one of those.  Work
 * fields are allocated at the first solve that needs them and kept.
 * `gauge` is borrowed, not copied: it must stay valid and unchanged until
 * wd_solver_destroy (the float64 true-residual check reads it).  One
 * solver is used by one thread at a time.
 */
typedef struct wd_solver wd_solver;

wd_status wd_solver_create(wd_solver **solver, const double *gauge, const int dims[4],
                           const wd_solver_settings *s);
wd_status wd_solver_solve(wd_solver *solver, double *x, const double *b,
                          const wd_solver_settings *s, wd_solver_stats *stats);

/*
 * wd_solver_solve with x and b in GPU memory (a solver on the CUDA
 * backend; the CPU backend answers WD_ERR_INVALID): the same host layout
 * and contract, the arrays read and written on the device (converted there;
 * the call synchronizes the device before and after, so arrays written on
 * other streams are safe).  NaN or Inf in b: WD_ERR_INVALID naming the
 * site, x zero.  The float64 true residual is measured on the device for a
 * double outer level without clover; otherwise, and when a refinement round
 * is due, x and b are read back to the host for wd_solver_solve's check and
 * x is written back.  A gauge-fixed solver changes the gauge of b and x
 * on the device.
 */
wd_status wd_solver_solve_device(wd_solver *solver, double *x, const double *b,
                                 const wd_solver_settings *s, wd_solver_stats *stats);

/*
 * n right-hand sides at once: x[i] solves M x[i] = b[i] with the contract
 * of wd_solver_solve for each (full-lattice host fields, on a grid this
 * rank's blocks and collective; the float64 true-residual check and
 * refinement per right-hand side; a zero b[i] gives x[i] = 0 and WD_OK for
 * it while the others solve).  The solves run in lock step in groups of at
 * most WD_SOLVE_MANY_GROUP: one Krylov iteration of every unconverged
 * right-hand side of a group shares each application of the even-odd
 * operator (docs/solvers.md, "Many right-hand sides"); each right-hand
 * side keeps its own iteration, checks and convergence, and gets the
 * iterations and x that wd_solver_solve gives it, bit for bit (except a
 * half-precision sloppy level on the GPU, whose multi-RHS kernels round
 * differently: on an H100 the same iterations, x within 2.4e-10 relative
 * of the single solve's at tol 1e-9; tests/test_solve_many.c).  The
 * work fields grow to a group's size and are kept until destroy.
 *  Every source is checked first: NaN or Inf in b[i] returns
 * WD_ERR_INVALID naming i and the site, nothing solved and every x zero.
 * Invalid settings or arguments (NULL, x[i] aliasing any b[j] or x[j]) the
 * same.  Otherwise returns WD_OK, or the first right-hand side's failure
 * (lowest i; the message names it), each x[i] holding its solve's best
 * iterate; a failure that is no solver outcome (memory, device,
 * communication) zeroes every x.
 *  stats (may be NULL) gets n entries: iterations, residuals and memory
 * per right-hand side; seconds, solve_seconds and flops are its group's
 * divided evenly among the group's right-hand sides (a refinement's time
 * added to its own); a zero source's are 0.  settings.progress is not
 * called (one callback could not tell the right-hand sides apart).
 */
#define WD_SOLVE_MANY_GROUP 12
wd_status wd_solver_solve_many(wd_solver *solver, double *const x[], const double *const b[],
                               int n, const wd_solver_settings *s, wd_solver_stats stats[]);
/* The same with every x[i] and b[i] in GPU memory (wd_solver_solve_device's
 * terms for each right-hand side). */
wd_status wd_solver_solve_many_device(wd_solver *solver, double *const x[],
                                      const double *const b[], int n,
                                      const wd_solver_settings *s, wd_solver_stats stats[]);
/* Free everything the solver holds; NULL is a no-op. */
void wd_solver_destroy(wd_solver *solver);

/* ---------------------------------------------------------------------- */
/* Multigrid (runtime/multigrid/, docs/solvers.md "Multigrid")              */

#define WD_MG_MAX_LEVELS 4
/* the most adaptive refinement passes, and outer iterations a pass's solve
 * (wd_mg_settings.refine_passes, refine_iter) */
#define WD_MG_MAX_REFINE 8
#define WD_MG_MAX_REFINE_ITER 100
/* the most CA-GCR smoother steps (wd_mg_settings.smoother) */
#define WD_MG_MAX_SMOOTH 32

typedef enum wd_mg_cycle {
    WD_MG_VCYCLE = 0,   /* each coarse level: one application of the next level's cycle */
    WD_MG_KCYCLE = 1    /* each coarse level: GCR to coarse_tol, preconditioned by the next */
} wd_mg_cycle;

typedef enum wd_mg_smoother {
    WD_MG_SMOOTHER_MR = 0,     /* minimal residual: each step minimises |r - A e| along its residual */
    WD_MG_SMOOTHER_CA_GCR = 1  /* communication-avoiding GCR(s) (QUDA's ca-gcr): the s steps' Krylov
                                * basis r, A r, ..., A^(s-1) r built first, |r - A e| minimised over
                                * it at once (s reductions, one least-squares solve) */
} wd_mg_smoother;

/*
 * Adaptive aggregation multigrid: level l's aggregates are blocks of
 * block[l] sites of level l, split by chirality, so a site of level l + 1
 * carries 2 nvec[l] unknowns.  Null vectors: nvec[l] random vectors (seeded)
 * relaxed on the homogeneous system of level l (CG on the normal equations
 * to setup_tol or setup_max_iter iterations), then block-orthonormalised.
 * It runs on the solver's process grid (each rank its block of every
 * level: block[l] divides the local extents): the fine level (outer
 * GCR, smoother, relaxation), the transfers and the coarse levels on the
 * solver's backend, the setup's orthonormalisation, coarse builds and
 * diagnostics in float64 (the first coarse build on the GPU with the CUDA
 * backend); the true residual is checked as for every solver.  save and
 * load work on any grid (rank 0 holds the file, in the global site order:
 * a file saved on one grid loads on another).
 */
typedef struct wd_mg_settings {
    int levels;                         ///< 2: levels, the fine one included (2 .. WD_MG_MAX_LEVELS)
    int block[WD_MG_MAX_LEVELS - 1][4]; ///< {4,4,4,4}, then {2,2,2,2}: aggregate extents of level l (each divides the level's extents)
    int nvec[WD_MG_MAX_LEVELS - 1];     ///< 24, then 32: null vectors of level l
    double setup_tol;                   ///< 5e-6: relative residual of each null vector's relaxation, |A^dag A v| / |A^dag A v0| (CG's on the normal equations, as QUDA's)
    int setup_max_iter;                 ///< 500: iteration cap of each relaxation
    int pre_smooth;                     ///< 0: smoother steps before the coarse correction
    int post_smooth;                    ///< 8: smoother steps after it (QUDA's; CA-GCR(8) solved faster than CA-GCR(6) and MR(8) at every kappa measured, docs/performance.md)
    wd_mg_cycle cycle;                  ///< WD_MG_KCYCLE
    double coarse_tol;                  ///< 0.25: relative tolerance of each coarse-level GCR (K-cycle) and of the coarsest solve
    int coarse_max_iter;                ///< 100: iteration cap of each of those (QUDA's; at 24, the cap of a first version, the coarse solves at kappa 0.1568 on 24^3x64 stopped at it 23 times in 24 and the outer iterations rose)
    int gcr_nkrylov;                    ///< 20: basis of the outer flexible GCR before a restart (and of the coarse GCRs)
    uint64_t seed;                      ///< 1: random starts of the null vectors
    int verbosity;                      ///< 0: 1 the setup summary and diagnostics per level, 2 also every outer iteration, 3 also each solve's seconds by part, the device synchronised after each (slower) (stderr)
    const char *save;                   ///< NULL: write the setup's null vectors (as relaxed, or as the refinement left them; every level) to this file, which a later setup's `load` turns into the same multigrid bit for bit (on a grid rank 0 writes it, in the global site order)
    int save_overwrite;                 ///< 0: 1 replaces an existing file at `save` (0 refuses it before the setup starts)
    const char *load;                   ///< NULL: take the null vectors from this file instead of relaxing them (levels, blocks and nvec must match it; the coarse operators are built for this setup's mass, so a file serves nearby masses too)
    int coarse_eo;                      ///< 1: the coarsest level's GCR solves its even-odd Schur complement 1 - X^-1 Y_eo X^-1 Y_oe (QUDA's) where every global coarse extent is even (else, and with 0, the whole coarse operator)
    int diagnostics;                    ///< 0: 1 measures the setup's float64 checks (orth_error, coarse_error of wd_mg_setup_stats; about 15% of a setup on the GPU), as verbosity >= 1 does; else they are NaN
    wd_mg_smoother smoother;            ///< WD_MG_SMOOTHER_CA_GCR: every level's smoother (pre_smooth, post_smooth its steps; CA-GCR keeps that many more fields of the level, at most 32 steps)
    int outer_eo;                       ///< 1 (QUDA's choice; 1.19-1.20x faster Wilson solves and 1.03x clover than 0, the same iterations, docs/performance.md): 1 runs the outer flexible GCR on the even-odd Schur system Mhat x_e = b'_e of the solver's clover form (QUDA's --solve-type direct-pc: single-parity Krylov fields, the cycle's transfers on the even sites), x_o reconstructed; 0 on the full system
    int lock_step;                      ///< 0: the most right-hand sides of wd_solver_solve_many (and wd_propagator_mg's 12 columns) whose outer GCRs go in lock step with outer_eo, the last level's solves of a 2-level multigrid on one process batched (each right-hand side still its own solve's iterations and, with single coarse links, bits); 0 all of a group (WD_SOLVE_MANY_GROUP), 1 one after another; each beyond the first keeps 7 outer and 2 gcr_nkrylov + 2 single-precision parity fields of its own (0 .. WD_SOLVE_MANY_GROUP).  The setup's coarse null vectors relax as many at a time (0: WD_SOLVE_MANY_GROUP), each with the bits of its relaxation alone
    int refine_passes;                  ///< 0: adaptive refinement passes after the setup (DD-alphaAMG's setup iterations): each replaces the first level's null vectors by x_k / |x_k|, x_k from refine_iter outer iterations of the multigrid's own solve of A x = v_k (a step of inverse iteration, which concentrates them further on the low modes), then rebuilds every level from them (orthonormalisation, the coarse operators, the coarser levels' null vectors relaxed afresh); 0 .. 8; ignored with `load` (a file saved by a refined setup holds its refined vectors)
    int refine_iter;                    ///< 2: the outer iterations of each of those solves (1 .. 100)
} wd_mg_settings;

typedef struct wd_mg_setup_stats {
    double seconds;                     ///< setup wall time: null vectors (relaxed, or read with `load`), orthonormalisation, coarse operators, writing `save`
    double fine_applies;                ///< cost in fine-operator applications (the relaxations' and the coarse build's)
    int levels;
    int coarse_dims[WD_MG_MAX_LEVELS][4];  ///< each level's extents ([0] the fine lattice)
    double setup_residual[WD_MG_MAX_LEVELS - 1];  ///< the largest |A^dag A v| / |A^dag A v0| of a level's relaxed vectors (0 for vectors read with `load`)
    int setup_unconverged[WD_MG_MAX_LEVELS - 1];  ///< relaxations of a level that stopped at the cap above setup_tol
    double orth_error[WD_MG_MAX_LEVELS - 1];      ///< ||P^dag P - 1|| (max abs entry) of each level (NaN unless diagnostics or verbosity >= 1)
    double coarse_error[WD_MG_MAX_LEVELS - 1];    ///< ||D_c v - P^dag A P v|| / ||D_c v|| on a random v (the same)
    double diagnostics_seconds;         ///< the part of `seconds` the diagnostics took (0 where not measured)
    double refine_seconds;              ///< the part of `seconds` the refinement passes took (their solves and rebuilds)
    double refine_residual;             ///< the last pass's largest |v_k - A x_k| / |v_k| after its refine_iter iterations (NaN without passes): how well the multigrid it refined solved
} wd_mg_setup_stats;

void wd_mg_default_settings(wd_mg_settings *m);

/*
 * Build the multigrid of a solver for the mass (and c_sw) of s: null
 * vectors, transfers and coarse operators, kept in the solver for every
 * later wd_solver_solve with s->solver = WD_SOLVER_MG and the same mass
 * (another mass or a new setup: call again; the old one is freed).  Bad
 * settings (a block that does not divide, nvec above an aggregate's
 * dimension, a level count outside 2 .. WD_MG_MAX_LEVELS) give
 * WD_ERR_INVALID naming the level and the setting, the solver unchanged.
 * Collective on a process grid: every rank gets the same status (a
 * failure of one rank's reaches the others as "rank R: <its message>").
 * stats may be NULL.
 */
wd_status wd_solver_mg_setup(wd_solver *solver, const wd_mg_settings *m,
                             const wd_solver_settings *s, wd_mg_setup_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
