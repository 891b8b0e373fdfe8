/*
 * wd_operator.h: the operator module (runtime/operator/): the Dslash
 * variants the generator emitted (their registry and their CPU entry
 * points; the CUDA launchers in wd_operator_cuda.h), the host-field entry
 * wd_dslash_cpu (wdirac.h) and the float64 reference (ref_wilson.h), which
 * shares no code with the generated variants.  It depends on core alone;
 * the backends run its variants, the numerics module builds the even-odd
 * operator from them through a backend, tests and benchmarks judge them
 * against the reference.
 *
 * The externally accessible definitions are
 *   wd_variants[], wd_variant_count  generated (wd_registry.c), manifest order
 *   wd_variant_find                  look a variant up by its name
 *   wd_variant_find_axes             ... or by its axis values (no names spelled by hand)
 *   wd_variant_find_op               the same for any operator (clover kernels)
 *   wd_variant_find_nrhs / _form     ... for N right-hand sides (of one form)
 * A variant's name spells every axis (generator/naming.py); its fields here
 * repeat them as numbers for the runtime.
 */
#ifndef WDIRAC_OPERATOR_H
#define WDIRAC_OPERATOR_H

#include "wd_kernel.h"
#include "wdirac.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*wd_cpu_dslash_fn)(const wd_dslash_args *a);

/* what a kernel applies (generator/axes.py, Operator) */
typedef enum wd_operator_kind {
    WD_OP_WILSON = 0,           /* out = D in (+ x): dslash_* */
    WD_OP_WILSON_CLOVER = 1,    /* out = C D in (+ x), C a clover field: dslashcl_* */
    WD_OP_CLOVER = 2            /* out = C in, site by site: clover_* */
} wd_operator_kind;

/* how a kernel of N > 1 right-hand sides spreads them over GPU threads
 * (generator/axes.py, Form; the CPU runs both as a loop over sites) */
typedef enum wd_rhs_form {
    WD_FORM_REGISTERS = 0,      /* a thread a site, all N in its registers: *_n<N> */
    WD_FORM_THREADS = 1,        /* a thread a site and right-hand side, a block of
                                 * sites x N sharing the links through L1: *_t<N> */
    WD_FORM_SHARED = 2          /* ... the block's links staged in shared memory: *_sh<N> */
} wd_rhs_form;

typedef struct wd_variant {
    const char *name;
    int op;             /* wd_operator_kind */
    int nrhs;           /* right-hand sides a call applies to (1: the plain kernels) */
    int form;           /* wd_rhs_form: how a multi-RHS kernel spreads them over threads */
    int precision;      /* bytes per stored real: 8, 4, 2 */
    int recon;          /* reals stored per link: 18, 12, 8 (0: clover_*) */
    int gauge_fix;
    int dagger;
    int xpay;
    wd_cpu_dslash_fn cpu;
} wd_variant;

extern const wd_variant wd_variants[];
extern const int wd_variant_count;

/* index into wd_variants of the variant with this name, -1 if not built */
int wd_variant_find(const char *name);
/* index of the built Wilson variant with these axis values, -1 if not built */
int wd_variant_find_axes(int precision, int recon, int gauge_fix, int dagger, int xpay);
/* the same for operator op; WD_OP_CLOVER matches the precision alone */
int wd_variant_find_op(int op, int precision, int recon, int gauge_fix, int dagger, int xpay);
/* ... with nrhs right-hand sides (wd_variant_find_op: 1), of any form (the
 * first in manifest order) */
int wd_variant_find_nrhs(int op, int precision, int recon, int gauge_fix, int dagger, int xpay,
                         int nrhs);
/* ... of one form (wd_rhs_form; nrhs 1 is either form's: the one-RHS kernel) */
int wd_variant_find_form(int op, int precision, int recon, int gauge_fix, int dagger, int xpay,
                         int nrhs, int form);

#ifdef __cplusplus
}
#endif

#endif
