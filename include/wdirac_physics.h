/*
 * wdirac_physics.h: physics measurements on top of the solvers
 * (runtime/physics/): point and wall propagators, zero-momentum meson
 * two-point functions and their effective masses.
 *
 * Conventions (DESIGN.md): host order, DeGrand-Rossi basis, complex double.
 * A propagator is the 12 columns S(x; y) of M^-1 for the 12 sources at y
 * (4 spins x 3 colours), stored site by site as a 12 x 12 matrix, sink spin
 * and colour before source spin and colour:
 *   prop[site][sink spin][sink colour][source spin][source colour]
 * (144 complex a site), which as a numpy array is (T, Z, Y, X, 4, 3, 4, 3).
 * On a process grid (wdirac.h's wd_lattice) every field is this rank's
 * block and every function is collective.
 *
 * The externally accessible functions are
 *   wd_propagator          solve for the 12 columns of a point or wall source
 *   wd_propagator_mg       the same, the 12 solves on one multigrid setup
 *   wd_meson_name          the name of a meson of wd_meson_correlators
 *   wd_meson_correlators   C(t) of the standard bilinears, zero momentum
 *   wd_effective_mass      the cosh (or sinh) effective mass per time slice
 */
#ifndef WDIRAC_PHYSICS_H
#define WDIRAC_PHYSICS_H

#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wd_source_type {
    WD_SOURCE_POINT = 0,    /* 1 at one site, for each spin and colour */
    WD_SOURCE_WALL = 1      /* 1 at every site of one time slice, for each spin and colour */
} wd_source_type;

typedef struct wd_source {
    wd_source_type type;
    int site[4];            /* point: x, y, z, t (global); wall: the time slice site[3] */
} wd_source;

/*
 * The 12 columns: column (s, c) solves M x = b with b the source at spin s
 * and colour c, with one wd_solver for all (the gauge field uploaded once),
 * settings s (its grid replaced by lat's), the 12 solves one lock-step
 * batch (wd_solver_solve_many: each column's iterations and solution are
 * those of its own wd_solver_solve; host memory 24 spinors of the block).
 * prop is lat->local's block, 144 complex a site; stats (may be NULL)
 * receives each column's stats, in the order 3 s + c (seconds: the
 * batch's divided by 12).  A solver failure (diverged, stagnated, NaN,
 * max_iter) of a column returns the first failing column's status with
 * every column's best iterate in prop; any other failure leaves prop
 * unwritten.  WD_ERR_INVALID for a source site outside the lattice.
 */
wd_status wd_propagator(double *prop, const double *gauge, const wd_lattice *lat,
                        const wd_source *src, const wd_solver_settings *s,
                        wd_solver_stats stats[12]);

/*
 * wd_propagator with the multigrid of wdirac.h ("Multigrid"): mg NULL is
 * wd_propagator; otherwise one wd_solver_mg_setup with mg, for the mass
 * (and c_sw) of s, serves all 12 columns, which then solve with
 * WD_SOLVER_MG (s->solver is not read; wd_solver_solve_many runs the
 * columns' outer GCRs in lock step, mg->lock_step at a time, each its own
 * solve's iterations: docs/solvers.md).  mg_stats (may be NULL)
 * receives the setup's cost and diagnostics.  A setup that fails (bad
 * settings: WD_ERR_INVALID naming the level and the setting; a process
 * grid of several ranks, which this version of the multigrid refuses)
 * returns its status with prop unwritten.
 */
wd_status wd_propagator_mg(double *prop, const double *gauge, const wd_lattice *lat,
                           const wd_source *src, const wd_solver_settings *s,
                           const wd_mg_settings *mg, wd_mg_setup_stats *mg_stats,
                           wd_solver_stats stats[12]);

/* The mesons of wd_meson_correlators, in their order. */
enum { WD_MESON_PS, WD_MESON_A4P, WD_MESON_V, WD_MESON_S, WD_MESON_COUNT };

/* "pseudoscalar", "a4-pseudoscalar", "vector", "scalar"; NULL otherwise.
 * sign (may be NULL): +1 when C(t) = C(T - t) (cosh), -1 when
 * C(t) = -C(T - t) (sinh). */
const char *wd_meson_name(int meson, int *sign);

/*
 * Zero-momentum meson two-point functions of two degenerate flavours,
 *   C_AB(t) = sum_x < O_A(x, t0 + t) O_B(y)^dagger >,  O_A = psibar_1 A psi_2,
 *           = - sum_x Re tr[ A S(x; y) Bbar g5 S(x; y)^dagger g5 ],
 *   Bbar = g4 B^dagger g4, by g5-hermiticity S(y; x) = g5 S(x; y)^dagger g5:
 *   pseudoscalar  A = B = g5            (= sum_x |S|^2 > 0)
 *   a4-pseudoscalar A = g4 g5, B = g5   (odd in t)
 *   vector        A = B = g_i, averaged over i = 1, 2, 3
 *   scalar        A = B = 1
 * with t counted from the source's time slice t_source (global; t = 0 ..
 * T-1).  corr[meson * T + t], T the global time extent; every rank gets
 * the whole array (sums over ranks in rank order: deterministic).
 */
wd_status wd_meson_correlators(double *corr, const double *prop, const wd_lattice *lat,
                               int t_source);

/*
 * meff[t] for t = 0 .. T/2 - 1: the m solving
 *   C(t) / C(t+1) = f(m (t - T/2)) / f(m (t + 1 - T/2)),
 * f = cosh for sign +1, sinh for sign -1 (the periodic lattice's forward
 * plus backward propagating state), NaN where no m in (0, 10] does (a
 * ratio that is not that of one state).  T even.
 */
wd_status wd_effective_mass(double *meff, const double *corr, int T, int sign);

#ifdef __cplusplus
}
#endif

#endif
