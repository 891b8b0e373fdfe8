/*
 * cli_util.c: what the `wdirac` subcommands share.
 *
 * The externally accessible functions are
 *   wd_cli_exit_code   status code -> exit code (cli_util.h lists the
 *                      mapping); a status this function does not know is
 *                      an internal error
 *   wd_cli_parse_grid  --grid Px Py Pz Pt
 *   wd_cli_printer     1 on rank 0
 *   wd_cli_mg_init, wd_cli_mg_parse, wd_cli_mg_finish
 *                      --mg and --mg-* into a wd_mg_settings, each value
 *                      checked where the option is read, so a message
 *                      names the option; what needs the lattice (a block
 *                      that does not divide, nvec above an aggregate's
 *                      dimension) wd_solver_mg_setup checks, and
 *                      wd_cli_mg_option_of names the option its message
 *                      is about
 *   wd_cli_mg_usage    their help, the defaults read from
 *                      wd_mg_default_settings
 *   wd_cli_mg_print_settings, wd_cli_mg_print_setup,
 *   wd_cli_mg_format_levels, wd_cli_mg_json, wd_cli_mg_setup_json,
 *   wd_cli_mg_levels_json
 *                      the summary lines and JSON of a multigrid that
 *                      every command prints alike
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

int wd_cli_exit_code(wd_status s)
{
    switch (s) {
    case WD_OK:
        return WD_EXIT_OK;
    case WD_ERR_DIVERGED:
    case WD_ERR_STAGNATED:
    case WD_ERR_NAN:
    case WD_ERR_MAX_ITER:
        return WD_EXIT_FAILED;
    case WD_ERR_INVALID:
    case WD_ERR_IO:
    case WD_ERR_CORRUPT:
    case WD_ERR_NOT_BUILT:
        return WD_EXIT_USAGE;
    case WD_ERR_NO_DEVICE:
        return WD_EXIT_NO_DEVICE;
    case WD_ERR_NOMEM:
    case WD_ERR_CUDA:
    case WD_ERR_INTERNAL:
        break;
    }
    return WD_EXIT_INTERNAL;
}

int wd_cli_parse_grid(const char *prog, int argc, char **argv, int *i, int grid[4])
{
    int g[4];
    for (int mu = 0; mu < 4; ++mu) {
        const char *s = *i + 1 + mu < argc ? argv[*i + 1 + mu] : NULL;
        char *end = NULL;
        errno = 0;
        const long v = s ? strtol(s, &end, 10) : 0;
        if (!s || end == s || *end || errno || v < 1 || v > 1 << 20) {
            if (wd_cli_printer())
                fprintf(stderr, "%s: --grid needs four integers >= 1 (Px Py Pz Pt)%s%s%s\n", prog,
                        s ? ", not '" : "", s ? s : "", s ? "'" : "");
            return 0;
        }
        g[mu] = (int)v;
    }
    for (int mu = 0; mu < 4; ++mu)
        grid[mu] = g[mu];
    *i += 4;
    return 1;
}

int wd_cli_printer(void)
{
    return wd_rank() == 0;
}

/* ---- the multigrid options ------------------------------------------------ */

static void mg_list_blocks(char *buf, size_t len, const wd_mg_settings *m, const char *sep)
{
    size_t at = 0;
    buf[0] = 0;
    for (int l = 0; l + 1 < m->levels && at < len; ++l)
        at += (size_t)snprintf(buf + at, len - at, "%s%dx%dx%dx%d", l ? sep : "",
                               m->block[l][0], m->block[l][1], m->block[l][2], m->block[l][3]);
}

static void mg_list_nvec(char *buf, size_t len, const wd_mg_settings *m, const char *sep)
{
    size_t at = 0;
    buf[0] = 0;
    for (int l = 0; l + 1 < m->levels && at < len; ++l)
        at += (size_t)snprintf(buf + at, len - at, "%s%d", l ? sep : "", m->nvec[l]);
}

/* the defaults printed are wd_mg_default_settings', so the help cannot drift from them */
/* the smoother's name in options, messages and JSON */
static const char *mg_smoother_name(wd_mg_smoother s)
{
    return s == WD_MG_SMOOTHER_CA_GCR ? "ca-gcr" : "mr";
}

void wd_cli_mg_usage(FILE *f)
{
    wd_mg_settings d;
    wd_mg_default_settings(&d);
    char blocks[128], nvec[64];
    d.levels = WD_MG_MAX_LEVELS - 1;    /* the defaults of the first two levels' blocks */
    mg_list_blocks(blocks, sizeof blocks, &d, ", then ");
    mg_list_nvec(nvec, sizeof nvec, &d, ", then ");
    wd_mg_default_settings(&d);
    fprintf(f,
            "multigrid (adaptive aggregation, runtime/multigrid/; on the solver's backend, one\n"
            "process; coarse kernels for Nvec 8, 24 and 32 in a full build):\n"
            "  --mg                  solve with flexible GCR preconditioned by a multigrid cycle,\n"
            "                        set up once (null vectors, transfers, coarse operators)\n"
            "  --mg-levels N         levels, the fine one included, 2-%d (default %d)\n"
            "  --mg-block B[,B...]   aggregate of each level, from the fine one down: XxYxZxT or\n"
            "                        one number for all four (default %s); each\n"
            "                        must divide its level's extents\n"
            "  --mg-nvec N[,N...]    null vectors of each level (default %s)\n"
            "  --mg-setup-tol T      relative residual of each null vector's relaxation "
            "(default %g)\n"
            "  --mg-setup-iter N     iteration cap of each relaxation (default %d)\n"
            "  --mg-refine N         adaptive refinement passes after the setup, 0-8: each\n"
            "                        replaces the first level's null vectors by the\n"
            "                        multigrid's own approximate solves of A x = v (inverse\n"
            "                        iteration) and rebuilds every level (default %d)\n"
            "  --mg-refine-iter N    outer iterations of each of those solves (default %d)\n"
            "  --mg-smoother mr|ca-gcr   minimal residual, or communication-avoiding GCR\n"
            "                        (QUDA's ca-gcr: the steps' basis first, one least-squares\n"
            "                        solve) on every level (default %s)\n"
            "  --mg-pre N, --mg-post N   smoother steps before and after the coarse correction\n"
            "                        (default %d and %d; not both 0; at most %d with ca-gcr)\n"
            "  --mg-cycle v|k        V-cycle, or K-cycle: GCR on each coarse level (default %s)\n"
            "  --mg-coarse-tol T     relative tolerance of each coarse GCR (default %g)\n"
            "  --mg-coarse-iter N    iteration cap of each coarse GCR (default %d)\n"
            "  --mg-coarse-eo 0|1    1: the coarsest GCR on the even-odd Schur complement\n"
            "                        where every global coarse extent is even (default %d)\n"
            "  --mg-outer-eo 0|1     1: the outer GCR on the even-odd Schur system of the\n"
            "                        fine level (QUDA's --solve-type direct-pc), 0 on the\n"
            "                        full system (default %d)\n"
            "  --mg-lock-step N      right-hand sides (propagator columns) whose outer GCRs go\n"
            "                        in lock step with --mg-outer-eo 1, the coarse solves of\n"
            "                        2 levels on one process batched; 0 all, 1 one at a time;\n"
            "                        each one more keeps its own fields (default %d)\n"
            "  --mg-nkrylov N        GCR basis before a restart, outer and coarse (default %d)\n"
            "  --mg-seed N           random starts of the null vectors (default %llu)\n"
            "  --mg-verbose N        multigrid messages on stderr: 1 the setup's diagnostics per\n"
            "                        level, 2 also every outer iteration, 3 also a profile of\n"
            "                        each solve (the device synchronised after each part)\n"
            "                        (default: --verbose, at most 2)\n"
            "  --mg-save FILE        write the null vectors (as relaxed, every level) to FILE\n"
            "                        (an existing FILE only with --overwrite, where the\n"
            "                        command has it)\n"
            "  --mg-load FILE        take the null vectors from FILE instead of relaxing them:\n"
            "                        the same multigrid bit for bit (levels, blocks and nvec\n"
            "                        must match; the coarse operators follow this mass)\n",
            WD_MG_MAX_LEVELS, d.levels, blocks, nvec, d.setup_tol, d.setup_max_iter,
            d.refine_passes, d.refine_iter, mg_smoother_name(d.smoother), d.pre_smooth, d.post_smooth, WD_MG_MAX_SMOOTH, d.cycle == WD_MG_VCYCLE ? "v" : "k", d.coarse_tol,
            d.coarse_max_iter, d.coarse_eo, d.outer_eo, d.lock_step, d.gcr_nkrylov,
            (unsigned long long)d.seed);
}

void wd_cli_mg_init(wd_cli_mg *mg)
{
    memset(mg, 0, sizeof *mg);
    wd_mg_default_settings(&mg->m);
}

static int mg_bad(const char *prog, const char *opt, const char *need, const char *got)
{
    fprintf(stderr, "%s: %s needs %s, got '%s'\n", prog, opt, need, got ? got : "");
    return -1;
}

/* an integer in [lo, hi] filling all of s */
static int mg_long(const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    *v = s ? strtol(s, &end, 10) : 0;
    return s && end != s && !*end && !errno && *v >= lo && *v <= hi;
}

/* the bound of the options with no upper bound of their own */
#define MG_NO_MAX (1 << 30)

/* *out = the integer v of option opt in [lo, hi]; 0, or -1 after saying
 * what it needs, the words derived from the bounds (hi = MG_NO_MAX: no
 * upper bound said) */
static int mg_int(const char *prog, const char *opt, const char *v, int lo, int hi, int *out)
{
    long n;
    if (mg_long(v, lo, hi, &n)) {
        *out = (int)n;
        return 0;
    }
    char need[64];
    if (hi == MG_NO_MAX)
        snprintf(need, sizeof need, "an integer >= %d", lo);
    else if (lo == 0 && hi == 1)
        snprintf(need, sizeof need, "0 or 1");
    else
        snprintf(need, sizeof need, "an integer from %d to %d", lo, hi);
    return mg_bad(prog, opt, need, v);
}

/* a number in (0, 1) filling all of s */
static int mg_fraction(const char *s, double *v)
{
    char *end;
    *v = s ? strtod(s, &end) : NAN;
    return s && end != s && !*end && *v > 0 && *v < 1;
}

/* "B" or "XxYxZxT" of integers >= 1 */
static int mg_block(const char *s, int b[4])
{
    char *end;
    long v[4];
    int n = 0;
    for (;;) {
        errno = 0;
        if (*s < '0' || *s > '9')
            return 0;
        v[n++] = strtol(s, &end, 10);
        if (errno || v[n - 1] < 1 || v[n - 1] > 1L << 20)
            return 0;
        if (!*end)
            break;
        if (*end != 'x' || n == 4)
            return 0;
        s = end + 1;
    }
    if (n != 1 && n != 4)
        return 0;
    for (int mu = 0; mu < 4; ++mu)
        b[mu] = (int)v[n == 1 ? 0 : mu];
    return 1;
}

int wd_cli_mg_parse(const char *prog, int argc, char **argv, int *i, wd_cli_mg *mg)
{
    const char *a = argv[*i];
    if (strncmp(a, "--mg", 4) || (a[4] && a[4] != '-'))
        return 0;
    if (!strcmp(a, "--mg")) {
        mg->on = 1;
        return 1;
    }
    static const char *const known[] = {
        "--mg-levels", "--mg-block", "--mg-nvec", "--mg-setup-tol", "--mg-setup-iter",
        "--mg-pre", "--mg-post", "--mg-smoother", "--mg-cycle", "--mg-coarse-tol",
        "--mg-coarse-iter", "--mg-coarse-eo", "--mg-outer-eo", "--mg-nkrylov", "--mg-seed",
        "--mg-verbose", "--mg-save", "--mg-load", "--mg-lock-step", "--mg-refine",
        "--mg-refine-iter"};
    int k = 0;
    while (k < (int)(sizeof known / sizeof known[0]) && strcmp(a, known[k]))
        k++;
    if (k == (int)(sizeof known / sizeof known[0]))
        return 0;   /* the command's own "unknown option" */
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!v) {
        fprintf(stderr, "%s: %s needs a value\n", prog, a);
        return -1;
    }
    ++*i;
    if (!mg->first)
        mg->first = a;
    wd_mg_settings *m = &mg->m;
    long n;
    if (!strcmp(a, "--mg-levels")) {
        if (!mg_long(v, 2, WD_MG_MAX_LEVELS, &n)) {
            char need[64];
            snprintf(need, sizeof need, "an integer from 2 to %d (the fine level included)",
                     WD_MG_MAX_LEVELS);
            return mg_bad(prog, a, need, v);
        }
        m->levels = (int)n;
    } else if (!strcmp(a, "--mg-block") || !strcmp(a, "--mg-nvec")) {
        const int block = !strcmp(a, "--mg-block");
        char list[256];
        if (strlen(v) >= sizeof list)
            return mg_bad(prog, a, "a shorter list", v);
        strcpy(list, v);
        int count = 0;
        char *save = NULL;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (count == WD_MG_MAX_LEVELS - 1)
                return mg_bad(prog, a, block ? "at most 3 blocks (one a level above the "
                              "coarsest)" : "at most 3 counts (one a level above the coarsest)",
                              v);
            if (block ? !mg_block(t, m->block[count]) : !mg_long(t, 1, 4096, &n))
                return mg_bad(prog, a, block ? "blocks XxYxZxT or B (integers >= 1), one a "
                              "level, separated by commas" : "integers from 1 to 4096, one a "
                              "level, separated by commas", v);
            if (!block)
                m->nvec[count] = (int)n;
            count++;
        }
        if (!count || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
            return mg_bad(prog, a, block ? "blocks XxYxZxT or B, separated by commas"
                                         : "integers separated by commas", v);
        *(block ? &mg->nblock : &mg->nnvec) = count;
    } else if (!strcmp(a, "--mg-setup-tol")) {
        if (!mg_fraction(v, &m->setup_tol))
            return mg_bad(prog, a, "a number in (0, 1)", v);
    } else if (!strcmp(a, "--mg-setup-iter")) {
        return mg_int(prog, a, v, 0, MG_NO_MAX, &m->setup_max_iter) ? -1 : 1;
    } else if (!strcmp(a, "--mg-refine")) {
        return mg_int(prog, a, v, 0, WD_MG_MAX_REFINE, &m->refine_passes) ? -1 : 1;
    } else if (!strcmp(a, "--mg-refine-iter")) {
        return mg_int(prog, a, v, 1, WD_MG_MAX_REFINE_ITER, &m->refine_iter) ? -1 : 1;
    } else if (!strcmp(a, "--mg-pre") || !strcmp(a, "--mg-post")) {
        return mg_int(prog, a, v, 0, 1000,
                      !strcmp(a, "--mg-pre") ? &m->pre_smooth : &m->post_smooth) ? -1 : 1;
    } else if (!strcmp(a, "--mg-smoother")) {
        if (strcmp(v, "mr") && strcmp(v, "ca-gcr"))
            return mg_bad(prog, a, "mr or ca-gcr", v);
        m->smoother = v[0] == 'm' ? WD_MG_SMOOTHER_MR : WD_MG_SMOOTHER_CA_GCR;
    } else if (!strcmp(a, "--mg-cycle")) {
        if (strcmp(v, "v") && strcmp(v, "k"))
            return mg_bad(prog, a, "v or k", v);
        m->cycle = v[0] == 'v' ? WD_MG_VCYCLE : WD_MG_KCYCLE;
    } else if (!strcmp(a, "--mg-coarse-tol")) {
        if (!mg_fraction(v, &m->coarse_tol))
            return mg_bad(prog, a, "a number in (0, 1)", v);
    } else if (!strcmp(a, "--mg-coarse-iter")) {
        return mg_int(prog, a, v, 1, MG_NO_MAX, &m->coarse_max_iter) ? -1 : 1;
    } else if (!strcmp(a, "--mg-coarse-eo")) {
        return mg_int(prog, a, v, 0, 1, &m->coarse_eo) ? -1 : 1;
    } else if (!strcmp(a, "--mg-outer-eo")) {
        return mg_int(prog, a, v, 0, 1, &m->outer_eo) ? -1 : 1;
    } else if (!strcmp(a, "--mg-lock-step")) {
        return mg_int(prog, a, v, 0, WD_SOLVE_MANY_GROUP, &m->lock_step) ? -1 : 1;
    } else if (!strcmp(a, "--mg-nkrylov")) {
        return mg_int(prog, a, v, 1, 200, &m->gcr_nkrylov) ? -1 : 1;
    } else if (!strcmp(a, "--mg-save") || !strcmp(a, "--mg-load")) {
        if (!*v)
            return mg_bad(prog, a, "a file name", v);
        *(!strcmp(a, "--mg-save") ? &m->save : &m->load) = v;
    } else if (!strcmp(a, "--mg-seed")) {
        char *end;
        errno = 0;
        const unsigned long long seed = strtoull(v, &end, 0);
        if (end == v || *end || errno || *v == '-')
            return mg_bad(prog, a, "an unsigned 64-bit integer", v);
        m->seed = seed;
    } else {
        if (!mg_long(v, 0, 3, &n))
            return mg_bad(prog, a, "0, 1, 2 or 3", v);
        m->verbosity = (int)n;
        mg->have_verbose = 1;
    }
    return 1;
}

int wd_cli_mg_finish(const char *prog, wd_cli_mg *mg, int verbose)
{
    if (!mg->on && mg->first) {
        fprintf(stderr, "%s: %s needs --mg\n", prog, mg->first);
        return 0;
    }
    const wd_mg_settings *m = &mg->m;
    if (mg->nblock > m->levels - 1 || mg->nnvec > m->levels - 1) {
        fprintf(stderr, "%s: %s gives %d entries, but %d levels (--mg-levels) take %d, one a "
                "level above the coarsest\n", prog,
                mg->nblock > m->levels - 1 ? "--mg-block" : "--mg-nvec",
                mg->nblock > m->levels - 1 ? mg->nblock : mg->nnvec, m->levels, m->levels - 1);
        return 0;
    }
    if (m->pre_smooth + m->post_smooth < 1) {
        fprintf(stderr, "%s: --mg-pre and --mg-post are both 0: the cycle needs a smoother "
                "step\n", prog);
        return 0;
    }
    if (m->smoother == WD_MG_SMOOTHER_CA_GCR &&
        (m->pre_smooth > WD_MG_MAX_SMOOTH || m->post_smooth > WD_MG_MAX_SMOOTH)) {
        fprintf(stderr, "%s: --mg-smoother ca-gcr takes at most %d steps (--mg-pre %d, "
                "--mg-post %d)\n", prog, WD_MG_MAX_SMOOTH, m->pre_smooth, m->post_smooth);
        return 0;
    }
    if (!mg->have_verbose)
        mg->m.verbosity = verbose < 2 ? verbose : 2;
    return 1;
}

const char *wd_cli_mg_option_of(const char *message)
{
    static const char *const map[][2] = {
        {"multigrid file", "--mg-load, --mg-save"}, {"refine", "--mg-refine, --mg-refine-iter"},
        {"block", "--mg-block"}, {"nvec", "--mg-nvec"}, {"null vector", "--mg-nvec"},
        {"levels", "--mg-levels"}, {"setup_tol", "--mg-setup-tol"},
        {"coarse_tol", "--mg-coarse-tol"}, {"gcr_nkrylov", "--mg-nkrylov"},
        {"smooth", "--mg-pre, --mg-post"}};
    for (size_t k = 0; message && k < sizeof map / sizeof map[0]; ++k)
        if (strstr(message, map[k][0]))
            return map[k][1];
    return NULL;
}

void wd_cli_mg_print_settings(FILE *f, const char *label, const wd_mg_settings *m)
{
    char blocks[128], nvec[64];
    mg_list_blocks(blocks, sizeof blocks, m, ", ");
    mg_list_nvec(nvec, sizeof nvec, m, ", ");
    char refine[96] = "";
    if (m->refine_passes)
        snprintf(refine, sizeof refine, ", %d refinement pass%s of %d outer iterations",
                 m->refine_passes, m->refine_passes > 1 ? "es" : "", m->refine_iter);
    fprintf(f, "%s%d levels, %s; blocks %s; null vectors %s (CG to %.1e or %d iterations, seed "
            "%llu%s); %s smoother %d pre + %d post; coarse GCR to %g or %d iterations%s; outer "
            "flexible GCR(%d) on the %s system\n", label, m->levels, m->cycle == WD_MG_VCYCLE ? "V-cycle"
            : "K-cycle", blocks, nvec, m->setup_tol, m->setup_max_iter,
            (unsigned long long)m->seed, refine, m->smoother == WD_MG_SMOOTHER_MR ? "MR" : "CA-GCR",
            m->pre_smooth, m->post_smooth, m->coarse_tol, m->coarse_max_iter, m->coarse_eo ? " (the coarsest even-odd where it can)" : "",
            m->gcr_nkrylov, m->outer_eo ? "even-odd" : "full");
}

void wd_cli_mg_print_setup(FILE *f, const char *label, const wd_mg_setup_stats *st,
                           const wd_mg_settings *m)
{
    fprintf(f, "%s%.3f s, %.1f fine-operator applications\n", label, st->seconds,
            st->fine_applies);
    if (m->refine_passes && isfinite(st->refine_residual))
        fprintf(f, "%*s%d refinement pass%s in %.3f s (the last one's solves: |v - A x| / |v| "
                "<= %.2e)\n", (int)strlen(label), "", m->refine_passes,
                m->refine_passes > 1 ? "es" : "", st->refine_seconds, st->refine_residual);
    for (int l = 0; l + 1 < st->levels; ++l) {
        const int *c = st->coarse_dims[l + 1];
        fprintf(f, "%*slevel %d -> %d: coarse %dx%dx%dx%d; null vectors "
                "|A^dag A v| / |A^dag A v0| <= %.2e (%d of %d stopped at --mg-setup-iter above --mg-setup-tol%s); "
                "||P^dag P - 1|| = %.1e; ||D_c v - P^dag A P v|| / ||D_c v|| = %.1e%s\n",
                (int)strlen(label), "", l, l + 1, c[0], c[1], c[2], c[3], st->setup_residual[l],
                st->setup_unconverged[l], m->nvec[l],
                st->setup_unconverged[l] ? ": the setup did not reach its tolerance" : "",
                st->orth_error[l], st->coarse_error[l],
                isnan(st->orth_error[l]) ? " (not measured: --mg-verbose 1 measures them)" : "");
    }
}

void wd_cli_mg_format_levels(char *buf, size_t len, const wd_solver_stats *stats)
{
    size_t at = 0;
    buf[0] = 0;
    for (int l = 0; l < stats->mg_levels && l < 4 && at < len; ++l) {
        if (l == 0)
            at += (size_t)snprintf(buf, len, "fine smoother %d", stats->mg_iterations[0]);
        else
            at += (size_t)snprintf(buf + at, len - at, ", level %d %d", l,
                                   stats->mg_iterations[l]);
    }
}

/* jansson refuses NaN and Inf: null stands for them */
static json_t *mg_real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *wd_cli_mg_json(const wd_mg_settings *m, const wd_mg_setup_stats *st)
{
    json_t *block = json_array(), *nvec = json_array();
    for (int l = 0; block && nvec && l + 1 < m->levels; ++l) {
        json_array_append_new(block, json_pack("[iiii]", m->block[l][0], m->block[l][1],
                                               m->block[l][2], m->block[l][3]));
        json_array_append_new(nvec, json_integer(m->nvec[l]));
    }
    json_t *root = json_pack("{s:i, s:o, s:o, s:f, s:i, s:s, s:i, s:i, s:s, s:f, s:i, s:i, s:i, "
                             "s:I, s:i, s:i, s:i, s:i, s:i}",
                             "levels", m->levels, "block", block, "nvec", nvec,
                             "setup_tol", m->setup_tol, "setup_max_iter", m->setup_max_iter,
                             "smoother", mg_smoother_name(m->smoother),
                             "pre_smooth", m->pre_smooth, "post_smooth", m->post_smooth,
                             "cycle", m->cycle == WD_MG_VCYCLE ? "v" : "k",
                             "coarse_tol", m->coarse_tol, "coarse_max_iter", m->coarse_max_iter,
                             "coarse_eo", m->coarse_eo, "gcr_nkrylov", m->gcr_nkrylov,
                             "seed", (json_int_t)m->seed,
                             "verbosity", m->verbosity, "outer_eo", m->outer_eo,
                             "lock_step", m->lock_step, "refine_passes", m->refine_passes,
                             "refine_iter", m->refine_iter);
    if (!root || !st)
        return root;
    json_t *setup = wd_cli_mg_setup_json(st);
    if (!setup) {
        json_decref(root);
        return NULL;
    }
    json_object_set_new(root, "setup", setup);
    return root;
}

json_t *wd_cli_mg_setup_json(const wd_mg_setup_stats *st)
{
    json_t *dims = json_array(), *res = json_array(), *unconv = json_array(),
           *orth = json_array(), *coarse = json_array();
    for (int l = 0; l < st->levels; ++l) {
        const int *d = st->coarse_dims[l];
        json_array_append_new(dims, json_pack("[iiii]", d[0], d[1], d[2], d[3]));
        if (l + 1 == st->levels)
            break;
        json_array_append_new(res, mg_real(st->setup_residual[l]));
        json_array_append_new(unconv, json_integer(st->setup_unconverged[l]));
        json_array_append_new(orth, mg_real(st->orth_error[l]));
        json_array_append_new(coarse, mg_real(st->coarse_error[l]));
    }
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "seconds",
                     mg_real(st->seconds), "refine_seconds", mg_real(st->refine_seconds),
                     "refine_residual", mg_real(st->refine_residual),
                     "diagnostics_seconds", mg_real(st->diagnostics_seconds), "fine_applies",
                     mg_real(st->fine_applies), "dims", dims, "setup_residual", res,
                     "setup_unconverged", unconv, "orth_error", orth, "coarse_error", coarse);
}

json_t *wd_cli_mg_levels_json(const wd_solver_stats *stats)
{
    json_t *a = json_array();
    for (int l = 0; a && l < stats->mg_levels && l < 4; ++l)
        json_array_append_new(a, json_integer(stats->mg_iterations[l]));
    return a;
}
