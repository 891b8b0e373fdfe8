/*
 * _core.c: the CPython extension under the wdirac Python package, a thin
 * layer over the public C API (include/wdirac.h, wdirac_gauge.h) and
 * nothing else.  Written by hand against the stable C API rather than with
 * a binding generator: it needs no build dependency beyond Python's own
 * headers, and it controls the GIL exactly (released during heatbath
 * sweeps and solves, taken back only to call a Python progress callback).
 * Arrays arrive through the buffer protocol: C-contiguous, complex double
 * (format 'Zd'), of the exact size the lattice needs; wdirac/__init__.py
 * checks shapes and dtypes first and builds the numpy arrays, so this file
 * needs no numpy headers.
 *
 * The externally accessible functions are (module wdirac._core)
 *   gauge_header(path) -> dict          wd_gauge_read_header
 *   gauge_read(path, dims, out)         wd_gauge_read into out
 *   gauge_write(path, u, dims, opts)    wd_gauge_write
 *   gauge_generate(u, dims, beta, sweeps, seed, n_or, cuda)
 *                                       hot start and heatbath sweeps
 *   gauge_observables(u, dims) -> dict  wd_gauge_observables
 *   solver_create(u, dims, settings) -> capsule   wd_solver_create
 *   solver_mg_setup(capsule, settings, mg) -> dict   wd_solver_mg_setup: the
 *                                       multigrid of mg (a dict of
 *                                       wd_mg_settings' field names) kept
 *                                       in the solver; the setup's stats
 *   solver_solve(capsule, x, b, settings, progress) -> dict   wd_solver_solve
 *   solver_solve_device(capsule, x, b, settings) -> dict   wd_solver_solve_device
 *                                       on CUDA arrays taken through DLPack
 *                                       (__dlpack__: CuPy, PyTorch), no
 *                                       host copy
 *   solver_solve_many(capsule, x, b, n, settings) -> dict   wd_solver_solve_many
 *                                       on n sources back to back (the
 *                                       batch's code, status, message and
 *                                       a stats dict per source)
 *   apply(u, dims, x, out, mass, tbc, dagger)   out = M x (or M^dag x) with
 *                                       wd_dslash_cpu, in double (recon 18,
 *                                       or 12 where 18 is not built)
 *   propagator(u, dims, settings, wall, site, out, mg) -> list of stats dicts
 *                                       wd_propagator_mg into out (mg None:
 *                                       wd_propagator)
 *   meson_correlators(prop, dims, t0, out) -> list of (name, sign)
 *                                       wd_meson_correlators into out
 *   variants() -> list                  the built Dslash variants
 *   backend_ok(cuda) -> (bool, message) wd_backend_probe
 * Every failure raises wdirac.Error(status, message) with the C message;
 * nothing here exits or aborts.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wdirac.h"
#include "wdirac_gauge.h"
#include "wdirac_physics.h"

static PyObject *wd_py_error;

/* raise wdirac.Error(status name, message) and return NULL */
static PyObject *raise_status(wd_status st)
{
    PyObject *args = Py_BuildValue("(sis)", wd_status_string(st), (int)st, wd_last_error());
    if (args) {
        PyErr_SetObject(wd_py_error, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int parse_dims(PyObject *o, int dims[4])
{
    if (!PyArg_ParseTuple(o, "iiii", &dims[0], &dims[1], &dims[2], &dims[3]))
        return 0;
    const wd_status st = wd_check_dims(dims);
    if (st != WD_OK) {
        raise_status(st);
        return 0;
    }
    return 1;
}

/* A C-contiguous complex128 buffer of exactly `count` complex numbers. */
static int get_field(PyObject *o, Py_buffer *v, int writable, size_t count, const char *what)
{
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                                     (writable ? PyBUF_WRITABLE : 0)) < 0)
        return 0;
    const char *fmt = v->format ? v->format : "B";
    if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')
        fmt++;
    if (strcmp(fmt, "Zd") || v->itemsize != 16 || (size_t)v->len != count * 16) {
        PyErr_Format(PyExc_ValueError, "%s: need %zu complex128 values in C order, got %zd "
                     "bytes of format '%s'", what, count, v->len, v->format ? v->format : "B");
        PyBuffer_Release(v);
        return 0;
    }
    return 1;
}

/* ---- GPU arrays through DLPack -------------------------------------------- */
/* The DLPack ABI (dmlc/dlpack, unversioned "dltensor" capsules, which CuPy
 * and PyTorch hand out from __dlpack__): the structures as the protocol
 * defines them, declared here because the consumer side is these few lines. */
typedef struct {
    int32_t device_type;    /* 2: CUDA */
    int32_t device_id;
} dl_device;
typedef struct {
    uint8_t code;           /* 5: complex */
    uint8_t bits;
    uint16_t lanes;
} dl_dtype;
typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;       /* in elements; NULL: C order */
    uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
    dl_tensor tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *self);
} dl_managed;

enum { DL_CUDA = 2, DL_COMPLEX = 5 };

/* A CUDA array borrowed for the length of one call: the capsule consumed
 * (renamed "used_dltensor") and the producer's deleter called by release. */
typedef struct {
    PyObject *capsule;
    dl_managed *m;
    void *data;
} dl_borrow;

static void dl_release(dl_borrow *b)
{
    if (b->m && b->m->deleter)
        b->m->deleter(b->m);
    Py_XDECREF(b->capsule);
    memset(b, 0, sizeof *b);
}

/* obj.__dlpack__() as a C-contiguous complex128 CUDA array of `shape`
 * (ndim entries) */
static int dl_borrow_array(PyObject *obj, const int64_t *shape, int ndim, const char *what,
                           dl_borrow *b)
{
    memset(b, 0, sizeof *b);
    b->capsule = PyObject_CallMethod(obj, "__dlpack__", NULL);
    if (!b->capsule)
        return 0;
    dl_managed *m = PyCapsule_GetPointer(b->capsule, "dltensor");
    if (!m) {
        Py_CLEAR(b->capsule);
        return 0;
    }
    /* consumed: the capsule no longer frees the tensor, we do */
    if (PyCapsule_SetName(b->capsule, "used_dltensor") < 0) {
        Py_CLEAR(b->capsule);
        return 0;
    }
    b->m = m;
    const dl_tensor *t = &m->tensor;
    if (t->device.device_type != DL_CUDA) {
        PyErr_Format(PyExc_ValueError, "%s: a DLPack array on device type %d, need CUDA (2)", what,
                     (int)t->device.device_type);
        dl_release(b);
        return 0;
    }
    if (t->dtype.code != DL_COMPLEX || t->dtype.bits != 128 || t->dtype.lanes != 1) {
        PyErr_Format(PyExc_TypeError, "%s: DLPack dtype code %d, %d bits, need complex128", what,
                     (int)t->dtype.code, (int)t->dtype.bits);
        dl_release(b);
        return 0;
    }
    int ok = t->ndim == ndim;
    for (int k = 0; ok && k < ndim; ++k)
        ok = t->shape[k] == shape[k];
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "%s: a DLPack array of %d dimensions, not the spinor shape "
                     "(T, Z, Y, X, 4, 3) of the solver's lattice", what, (int)t->ndim);
        dl_release(b);
        return 0;
    }
    int64_t expect = 1;
    for (int k = ndim - 1; t->strides && k >= 0; --k) {
        if (t->shape[k] > 1 && t->strides[k] != expect) {
            PyErr_Format(PyExc_ValueError, "%s: not C-contiguous (stride %lld in dimension %d)",
                         what, (long long)t->strides[k], k);
            dl_release(b);
            return 0;
        }
        expect *= t->shape[k];
    }
    b->data = (char *)t->data + t->byte_offset;
    return 1;
}

/* ---- gauge fields -------------------------------------------------------- */

static PyObject *info_dict(const wd_gauge_info *info)
{
    return Py_BuildValue("{s:(iiii), s:s, s:i, s:i, s:O}", "dims", info->dims[0], info->dims[1],
                         info->dims[2], info->dims[3], "format",
                         info->format == WD_GAUGE_NERSC ? "nersc" : "ildg", "precision",
                         info->precision, "rows", info->rows, "big_endian",
                         info->big_endian ? Py_True : Py_False);
}

static PyObject *py_gauge_header(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    wd_gauge_info info;
    const wd_status st = wd_gauge_read_header(path, &info);
    return st == WD_OK ? info_dict(&info) : raise_status(st);
}

static PyObject *py_gauge_read(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    PyObject *dims_o, *out_o;
    int dims[4];
    if (!PyArg_ParseTuple(args, "sOO", &path, &dims_o, &out_o) || !parse_dims(dims_o, dims))
        return NULL;
    Py_buffer out;
    if (!get_field(out_o, &out, 1, wd_volume(dims) * 36, "gauge_read"))
        return NULL;
    double *u = NULL;
    wd_gauge_info info;
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wd_gauge_read(path, dims, 0, &u, &info);
    if (st == WD_OK)
        memcpy(out.buf, u, (size_t)out.len);
    Py_END_ALLOW_THREADS
    free(u);
    PyBuffer_Release(&out);
    return st == WD_OK ? info_dict(&info) : raise_status(st);
}

static PyObject *py_gauge_write(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"path", "u", "dims", "format", "precision", "two_row",
                            "little_endian", "overwrite", NULL};
    const char *path, *format = "nersc";
    PyObject *u_o, *dims_o;
    int precision = 64, two_row = 0, little = 0, overwrite = 0, dims[4];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOO|sippp", names, &path, &u_o, &dims_o,
                                     &format, &precision, &two_row, &little, &overwrite) ||
        !parse_dims(dims_o, dims))
        return NULL;
    wd_gauge_write_opts o = wd_gauge_write_defaults();
    if (!strcmp(format, "nersc"))
        o.format = WD_GAUGE_NERSC;
    else if (!strcmp(format, "ildg"))
        o.format = WD_GAUGE_ILDG;
    else
        return PyErr_Format(PyExc_ValueError, "format '%s': must be 'nersc' or 'ildg'", format);
    o.precision = precision;
    o.two_row = two_row;
    o.little_endian = little;
    o.overwrite = overwrite;
    Py_buffer u;
    if (!get_field(u_o, &u, 0, wd_volume(dims) * 36, "gauge_write"))
        return NULL;
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wd_gauge_write(path, u.buf, dims, &o);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&u);
    if (st != WD_OK)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_gauge_generate(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *u_o, *dims_o;
    double beta;
    int sweeps, n_or, cuda, dims[4];
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OOdiKip", &u_o, &dims_o, &beta, &sweeps, &seed, &n_or, &cuda) ||
        !parse_dims(dims_o, dims))
        return NULL;
    Py_buffer u;
    if (!get_field(u_o, &u, 1, wd_volume(dims) * 36, "gauge_generate"))
        return NULL;
    double *f = u.buf;
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wd_gauge_init(f, dims, WD_START_HOT, seed);
    if (cuda) {
        if (st == WD_OK)
            st = wd_gauge_gpu_open(f, dims);
        for (int i = 0; i < sweeps && st == WD_OK; i++)
            st = wd_gauge_gpu_sweep(beta, seed, (uint64_t)i, n_or, NULL);
        if (st == WD_OK)
            st = wd_gauge_gpu_fetch(f);
        wd_gauge_gpu_close();
    } else {
        for (int i = 0; i < sweeps && st == WD_OK; i++)
            st = wd_gauge_heatbath_sweep(f, dims, beta, seed, (uint64_t)i, n_or);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&u);
    if (st != WD_OK)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *py_gauge_observables(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *u_o, *dims_o;
    int dims[4];
    if (!PyArg_ParseTuple(args, "OO", &u_o, &dims_o) || !parse_dims(dims_o, dims))
        return NULL;
    Py_buffer u;
    if (!get_field(u_o, &u, 0, wd_volume(dims) * 36, "observables"))
        return NULL;
    wd_gauge_obs obs;
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wd_gauge_observables(u.buf, dims, &obs);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&u);
    if (st != WD_OK)
        return raise_status(st);
    return Py_BuildValue("{s:d, s:d, s:d, s:d, s:(dd)}", "plaquette", obs.plaquette,
                         "plaquette_space", obs.plaquette_space, "plaquette_time",
                         obs.plaquette_time, "link_trace", obs.link_trace, "polyakov",
                         obs.poly_re, obs.poly_im);
}

/* ---- solvers ------------------------------------------------------------- */

/* settings from a dict whose keys are wd_solver_settings' field names (the
 * Python layer has turned names into numbers); unknown keys are an error */
static int parse_settings(PyObject *d, wd_solver_settings *s)
{
    wd_solver_default_settings(s);
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "settings must be a dict");
        return 0;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &key, &value)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (!k)
            return 0;
#define INT(name, field)                                                                     \
    if (!strcmp(k, name)) {                                                                   \
        const long v = PyLong_AsLong(value);                                                  \
        if (v == -1 && PyErr_Occurred())                                                      \
            return 0;                                                                         \
        s->field = v;                                                                         \
        continue;                                                                             \
    }
#define REAL(name, field)                                                                    \
    if (!strcmp(k, name)) {                                                                   \
        const double v = PyFloat_AsDouble(value);                                             \
        if (v == -1 && PyErr_Occurred())                                                      \
            return 0;                                                                         \
        s->field = v;                                                                         \
        continue;                                                                             \
    }
        INT("solver", solver)
        INT("backend", backend)
        REAL("mass", mass)
        INT("tbc", tbc)
        REAL("csw", csw)
        INT("clover_form", clover_form)
        REAL("tol", tol)
        INT("max_iter", max_iter)
        INT("precision", precision)
        INT("recon", recon)
        INT("gauge_fix", gauge_fix)
        INT("sloppy_precision", sloppy_precision)
        INT("sloppy_recon", sloppy_recon)
        INT("sloppy_gauge_fix", sloppy_gauge_fix)
        INT("mixed", mixed)
        REAL("delta", delta)
        REAL("tol_inner", tol_inner)
        INT("max_stall", max_stall)
        REAL("divergence", divergence)
        INT("accumulator", accumulator)
        INT("pad", pad)
        INT("verbosity", verbosity)
#undef INT
#undef REAL
        PyErr_Format(PyExc_KeyError, "unknown solver setting '%s'", k);
        return 0;
    }
    return 1;
}

typedef struct solver_box {
    wd_solver *sv;
    int dims[4];
} solver_box;

static void solver_capsule_free(PyObject *cap)
{
    solver_box *b = PyCapsule_GetPointer(cap, "wdirac.solver");
    if (b) {
        wd_solver_destroy(b->sv);
        free(b);
    }
}

/* The Python layer keeps the gauge array alive as long as the capsule:
 * wd_solver borrows it (the float64 residual check reads it). */
static PyObject *py_solver_create(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *u_o, *dims_o, *set_o;
    int dims[4];
    if (!PyArg_ParseTuple(args, "OOO", &u_o, &dims_o, &set_o) || !parse_dims(dims_o, dims))
        return NULL;
    wd_solver_settings s;
    if (!parse_settings(set_o, &s))
        return NULL;
    Py_buffer u;
    if (!get_field(u_o, &u, 0, wd_volume(dims) * 36, "Solver gauge field"))
        return NULL;
    solver_box *b = calloc(1, sizeof *b);
    if (!b) {
        PyBuffer_Release(&u);
        return PyErr_NoMemory();
    }
    memcpy(b->dims, dims, sizeof dims);
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wd_solver_create(&b->sv, u.buf, dims, &s);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&u);
    if (st != WD_OK) {
        free(b);
        return raise_status(st);
    }
    PyObject *cap = PyCapsule_New(b, "wdirac.solver", solver_capsule_free);
    if (!cap) {
        wd_solver_destroy(b->sv);
        free(b);
    }
    return cap;
}

/* multigrid settings from a dict whose keys are wd_mg_settings' field
 * names (the Python layer has turned names into numbers and lists):
 * block a list of [X, Y, Z, T] and nvec a list of ints, one a level from
 * the fine one down; missing keys keep wd_mg_default_settings'; unknown
 * keys are an error */
static int parse_mg(PyObject *d, wd_mg_settings *m)
{
    wd_mg_default_settings(m);
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "mg settings must be a dict");
        return 0;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &key, &value)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (!k)
            return 0;
        if (!strcmp(k, "block") || !strcmp(k, "nvec")) {
            const int block = !strcmp(k, "block");
            PyObject *seq = PySequence_Fast(value, "mg: block and nvec must be lists");
            if (!seq)
                return 0;
            const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
            int ok = n >= 1 && n <= WD_MG_MAX_LEVELS - 1;
            if (!ok)
                PyErr_Format(PyExc_ValueError, "mg: %s needs 1 to %d entries (one a level "
                             "above the coarsest), got %zd", k, WD_MG_MAX_LEVELS - 1, n);
            for (Py_ssize_t l = 0; ok && l < n; l++) {
                PyObject *e = PySequence_Fast_GET_ITEM(seq, l);
                if (block)
                    ok = PyArg_ParseTuple(e, "iiii;mg: each block is (X, Y, Z, T)",
                                          &m->block[l][0], &m->block[l][1], &m->block[l][2],
                                          &m->block[l][3]);
                else
                    ok = (m->nvec[l] = (int)PyLong_AsLong(e)) != -1 || !PyErr_Occurred();
            }
            Py_DECREF(seq);
            if (!ok)
                return 0;
            continue;
        }
        if (!strcmp(k, "save") || !strcmp(k, "load")) {
            /* borrowed from the dict, which outlives the setup call */
            const char *v = PyUnicode_AsUTF8(value);
            if (!v)
                return 0;
            *(k[0] == 's' ? &m->save : &m->load) = v;
            continue;
        }
        if (!strcmp(k, "seed")) {
            const unsigned long long v = PyLong_AsUnsignedLongLong(value);
            if (v == (unsigned long long)-1 && PyErr_Occurred())
                return 0;
            m->seed = v;
            continue;
        }
#define INT(name, field)                                                                     \
    if (!strcmp(k, name)) {                                                                   \
        const long v = PyLong_AsLong(value);                                                  \
        if (v == -1 && PyErr_Occurred())                                                      \
            return 0;                                                                         \
        m->field = v;                                                                         \
        continue;                                                                             \
    }
#define REAL(name, field)                                                                    \
    if (!strcmp(k, name)) {                                                                   \
        const double v = PyFloat_AsDouble(value);                                             \
        if (v == -1 && PyErr_Occurred())                                                      \
            return 0;                                                                         \
        m->field = v;                                                                         \
        continue;                                                                             \
    }
        INT("levels", levels)
        REAL("setup_tol", setup_tol)
        INT("setup_max_iter", setup_max_iter)
        INT("pre_smooth", pre_smooth)
        INT("post_smooth", post_smooth)
        INT("cycle", cycle)
        INT("smoother", smoother)
        REAL("coarse_tol", coarse_tol)
        INT("coarse_max_iter", coarse_max_iter)
        INT("gcr_nkrylov", gcr_nkrylov)
        INT("verbosity", verbosity)
        INT("diagnostics", diagnostics)
        INT("coarse_eo", coarse_eo)
        INT("outer_eo", outer_eo)
        INT("lock_step", lock_step)
        INT("refine_passes", refine_passes)
        INT("refine_iter", refine_iter)
        INT("save_overwrite", save_overwrite)
#undef INT
#undef REAL
        PyErr_Format(PyExc_KeyError, "unknown multigrid setting '%s'", k);
        return 0;
    }
    return 1;
}

/* a list of n doubles (or ints) */
static PyObject *list_of(const double *v, const int *iv, int n)
{
    PyObject *l = PyList_New(n);
    for (int k = 0; l && k < n; k++) {
        PyObject *e = iv ? PyLong_FromLong(iv[k]) : PyFloat_FromDouble(v[k]);
        if (!e) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, k, e);
    }
    return l;
}

static PyObject *py_solver_mg_setup(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *set_o, *mg_o;
    if (!PyArg_ParseTuple(args, "OOO", &cap, &set_o, &mg_o))
        return NULL;
    solver_box *box = PyCapsule_GetPointer(cap, "wdirac.solver");
    if (!box)
        return NULL;
    wd_solver_settings s;
    wd_mg_settings m;
    if (!parse_settings(set_o, &s) || !parse_mg(mg_o, &m))
        return NULL;
    wd_mg_setup_stats st;
    wd_status rc;
    Py_BEGIN_ALLOW_THREADS
    rc = wd_solver_mg_setup(box->sv, &m, &s, &st);
    Py_END_ALLOW_THREADS
    if (rc != WD_OK)
        return raise_status(rc);
    const int n = st.levels - 1;
    PyObject *dims = PyList_New(st.levels);
    for (int l = 0; dims && l < st.levels; l++) {
        const int *c = st.coarse_dims[l];
        PyObject *t = Py_BuildValue("(iiii)", c[0], c[1], c[2], c[3]);
        if (!t) {
            Py_CLEAR(dims);
            break;
        }
        PyList_SET_ITEM(dims, l, t);
    }
    PyObject *res = list_of(st.setup_residual, NULL, n), *unc = list_of(NULL, st.setup_unconverged, n),
             *orth = list_of(st.orth_error, NULL, n), *coarse = list_of(st.coarse_error, NULL, n);
    if (!dims || !res || !unc || !orth || !coarse) {
        Py_XDECREF(dims);
        Py_XDECREF(res);
        Py_XDECREF(unc);
        Py_XDECREF(orth);
        Py_XDECREF(coarse);
        return NULL;
    }
    return Py_BuildValue("{s:d, s:d, s:d, s:d, s:d, s:i, s:N, s:N, s:N, s:N, s:N}", "seconds",
                         st.seconds, "refine_seconds", st.refine_seconds, "refine_residual",
                         st.refine_residual, "diagnostics_seconds", st.diagnostics_seconds,
                         "fine_applies",
                         st.fine_applies, "levels", st.levels, "dims", dims, "setup_residual", res,
                         "setup_unconverged", unc, "orth_error", orth, "coarse_error", coarse);
}

/* the progress callback: runs on the solving thread, takes the GIL for
 * the Python call; an exception is kept and raised after the solve */
typedef struct progress_ctx {
    PyObject *fn;
    PyObject *exc_type, *exc_value, *exc_tb;
} progress_ctx;

static void progress_trampoline(void *arg, int iterations, double residual)
{
    progress_ctx *p = arg;
    PyGILState_STATE g = PyGILState_Ensure();
    if (!p->exc_type) {
        PyObject *r = PyObject_CallFunction(p->fn, "id", iterations, residual);
        if (r)
            Py_DECREF(r);
        else
            PyErr_Fetch(&p->exc_type, &p->exc_value, &p->exc_tb);
    }
    PyGILState_Release(g);
}

/* "mg_levels" and "mg_iterations" (a list, one count a level: [0] the fine
 * smoother's steps) into a stats dict; 0 on failure */
static int add_mg_stats(PyObject *d, const wd_solver_stats *stats)
{
    const int n = stats->mg_levels > 0 && stats->mg_levels <= 4 ? stats->mg_levels : 0;
    PyObject *levels = PyLong_FromLong(stats->mg_levels), *its = PyList_New(n);
    int ok = levels && its && PyDict_SetItemString(d, "mg_levels", levels) == 0;
    for (int l = 0; ok && l < n; l++) {
        PyObject *v = PyLong_FromLong(stats->mg_iterations[l]);
        ok = v != NULL;
        if (ok)
            PyList_SET_ITEM(its, l, v);
    }
    ok = ok && PyDict_SetItemString(d, "mg_iterations", its) == 0;
    Py_XDECREF(levels);
    Py_XDECREF(its);
    return ok;
}

/* one solve's stats as the dict SolveStats takes, with its status and
 * message and "code" (the wd_status number) */
static PyObject *solve_stats_dict(const wd_solver_stats *stats, wd_status st, const char *msg)
{
    PyObject *d = Py_BuildValue(
        "{s:s, s:s, s:i, s:i, s:i, s:d, s:d, s:d, s:d, s:d, s:d, s:n}", "status",
        wd_status_string(st), "message", msg, "iterations",
        stats->iterations, "sloppy_iterations", stats->sloppy_iterations, "updates", stats->updates,
        "true_residual", stats->true_residual, "solver_residual", stats->solver_residual,
        "seconds", stats->seconds, "solve_seconds", stats->solve_seconds, "gflops", stats->gflops,
        "flops", stats->flops, "bytes_allocated", (Py_ssize_t)stats->bytes_allocated);
    PyObject *code = d ? PyLong_FromLong((long)st) : NULL;
    if (d && (!code || PyDict_SetItemString(d, "code", code) < 0 || !add_mg_stats(d, stats))) {
        Py_XDECREF(code);
        Py_DECREF(d);
        return NULL;
    }
    Py_XDECREF(code);
    return d;
}

static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* the stats dict of one solve with call_seconds, the wall time of the C
 * call (what the Python layer's overhead is measured against) */
static PyObject *one_solve_dict(const wd_solver_stats *stats, wd_status st, double call_seconds)
{
    PyObject *d = solve_stats_dict(stats, st, st == WD_OK ? "" : wd_last_error());
    PyObject *t = d ? PyFloat_FromDouble(call_seconds) : NULL;
    if (d && (!t || PyDict_SetItemString(d, "call_seconds", t) < 0)) {
        Py_XDECREF(t);
        Py_DECREF(d);
        return NULL;
    }
    Py_XDECREF(t);
    return d;
}

static PyObject *py_solver_solve(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *x_o, *b_o, *set_o, *progress;
    if (!PyArg_ParseTuple(args, "OOOOO", &cap, &x_o, &b_o, &set_o, &progress))
        return NULL;
    solver_box *box = PyCapsule_GetPointer(cap, "wdirac.solver");
    if (!box)
        return NULL;
    wd_solver_settings s;
    if (!parse_settings(set_o, &s))
        return NULL;
    const size_t n = wd_volume(box->dims) * 12;
    Py_buffer x, b;
    if (!get_field(x_o, &x, 1, n, "solve x"))
        return NULL;
    if (!get_field(b_o, &b, 0, n, "solve b")) {
        PyBuffer_Release(&x);
        return NULL;
    }
    progress_ctx p = {progress, NULL, NULL, NULL};
    if (progress != Py_None) {
        s.progress = progress_trampoline;
        s.progress_arg = &p;
    }
    wd_solver_stats stats;
    wd_status st;
    double t0 = 0, t1 = 0;
    Py_BEGIN_ALLOW_THREADS
    t0 = wall_seconds();
    st = wd_solver_solve(box->sv, x.buf, b.buf, &s, &stats);
    t1 = wall_seconds();
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x);
    PyBuffer_Release(&b);
    if (p.exc_type) {
        PyErr_Restore(p.exc_type, p.exc_value, p.exc_tb);
        return NULL;
    }
    return one_solve_dict(&stats, st, t1 - t0);
}

/* x, b: CUDA arrays (DLPack) of the spinor shape, wd_solver_solve_device */
static PyObject *py_solver_solve_device(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *x_o, *b_o, *set_o;
    if (!PyArg_ParseTuple(args, "OOOO", &cap, &x_o, &b_o, &set_o))
        return NULL;
    solver_box *box = PyCapsule_GetPointer(cap, "wdirac.solver");
    if (!box)
        return NULL;
    wd_solver_settings s;
    if (!parse_settings(set_o, &s))
        return NULL;
    const int64_t shape[6] = {box->dims[3], box->dims[2], box->dims[1], box->dims[0], 4, 3};
    dl_borrow x, b;
    if (!dl_borrow_array(x_o, shape, 6, "solve x", &x))
        return NULL;
    if (!dl_borrow_array(b_o, shape, 6, "solve b", &b)) {
        dl_release(&x);
        return NULL;
    }
    wd_solver_stats stats;
    wd_status st;
    double t0 = 0, t1 = 0;
    Py_BEGIN_ALLOW_THREADS
    t0 = wall_seconds();
    st = wd_solver_solve_device(box->sv, x.data, b.data, &s, &stats);
    t1 = wall_seconds();
    Py_END_ALLOW_THREADS
    dl_release(&x);
    dl_release(&b);
    return one_solve_dict(&stats, st, t1 - t0);
}

/* N sources (x, b of N fields each) in one wd_solver_solve_many */
/* nsrc solves of wd_solver_solve_many (device: _device) on x and b holding
 * nsrc fields back to back */
static PyObject *run_many(solver_box *box, void *xbuf, const void *bbuf, int nsrc,
                          const wd_solver_settings *s, int device)
{
    const size_t n = wd_volume(box->dims) * 12;
    double **xp = PyMem_Calloc((size_t)nsrc, sizeof *xp);
    const double **bp = PyMem_Calloc((size_t)nsrc, sizeof *bp);
    wd_solver_stats *stats = PyMem_Calloc((size_t)nsrc, sizeof *stats);
    PyObject *out = NULL;
    if (!xp || !bp || !stats) {
        PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < nsrc; k++) {
        xp[k] = (double *)xbuf + 2 * n * (size_t)k;
        bp[k] = (const double *)bbuf + 2 * n * (size_t)k;
    }
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = device ? wd_solver_solve_many_device(box->sv, xp, bp, nsrc, s, stats)
                : wd_solver_solve_many(box->sv, xp, bp, nsrc, s, stats);
    Py_END_ALLOW_THREADS
    const char *msg = st == WD_OK ? "" : wd_last_error();
    PyObject *list = PyList_New(nsrc);
    for (int k = 0; list && k < nsrc; k++) {
        /* a source's own message where it failed: the batch's names the first */
        PyObject *d = solve_stats_dict(&stats[k], stats[k].status,
                                 stats[k].status == WD_OK ? "" : msg);
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, k, d);
    }
    if (list)
        out = Py_BuildValue("{s:i, s:s, s:s, s:N}", "code", (int)st, "status",
                            wd_status_string(st), "message", msg, "stats", list);
done:
    PyMem_Free(xp);
    PyMem_Free(bp);
    PyMem_Free(stats);
    return out;
}

static PyObject *py_solver_solve_many(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *x_o, *b_o, *set_o;
    int nsrc;
    if (!PyArg_ParseTuple(args, "OOOiO", &cap, &x_o, &b_o, &nsrc, &set_o))
        return NULL;
    solver_box *box = PyCapsule_GetPointer(cap, "wdirac.solver");
    if (!box)
        return NULL;
    wd_solver_settings s;
    if (!parse_settings(set_o, &s))
        return NULL;
    if (nsrc < 1) {
        PyErr_SetString(PyExc_ValueError, "solve: need at least one source");
        return NULL;
    }
    const size_t n = wd_volume(box->dims) * 12;
    Py_buffer x, b;
    if (!get_field(x_o, &x, 1, n * (size_t)nsrc, "solve x"))
        return NULL;
    if (!get_field(b_o, &b, 0, n * (size_t)nsrc, "solve b")) {
        PyBuffer_Release(&x);
        return NULL;
    }
    PyObject *out = run_many(box, x.buf, b.buf, nsrc, &s, 0);
    PyBuffer_Release(&x);
    PyBuffer_Release(&b);
    return out;
}

/* the same on CUDA arrays (DLPack) of shape (N, T, Z, Y, X, 4, 3) */
static PyObject *py_solver_solve_many_device(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *x_o, *b_o, *set_o;
    int nsrc;
    if (!PyArg_ParseTuple(args, "OOOiO", &cap, &x_o, &b_o, &nsrc, &set_o))
        return NULL;
    solver_box *box = PyCapsule_GetPointer(cap, "wdirac.solver");
    if (!box)
        return NULL;
    wd_solver_settings s;
    if (!parse_settings(set_o, &s))
        return NULL;
    if (nsrc < 1) {
        PyErr_SetString(PyExc_ValueError, "solve: need at least one source");
        return NULL;
    }
    const int64_t shape[7] = {nsrc, box->dims[3], box->dims[2], box->dims[1], box->dims[0], 4, 3};
    dl_borrow x, b;
    if (!dl_borrow_array(x_o, shape, 7, "solve x", &x))
        return NULL;
    if (!dl_borrow_array(b_o, shape, 7, "solve b", &b)) {
        dl_release(&x);
        return NULL;
    }
    PyObject *out = run_many(box, x.data, b.data, nsrc, &s, 1);
    dl_release(&x);
    dl_release(&b);
    return out;
}

static PyObject *py_apply(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *u_o, *dims_o, *x_o, *out_o;
    double mass;
    int tbc, dagger, dims[4];
    if (!PyArg_ParseTuple(args, "OOOOdip", &u_o, &dims_o, &x_o, &out_o, &mass, &tbc, &dagger) ||
        !parse_dims(dims_o, dims))
        return NULL;
    const size_t vol = wd_volume(dims);
    Py_buffer u, x, out;
    if (!get_field(u_o, &u, 0, vol * 36, "apply gauge field"))
        return NULL;
    if (!get_field(x_o, &x, 0, vol * 12, "apply x")) {
        PyBuffer_Release(&u);
        return NULL;
    }
    if (!get_field(out_o, &out, 1, vol * 12, "apply out")) {
        PyBuffer_Release(&u);
        PyBuffer_Release(&x);
        return NULL;
    }
    /* M x = (4+m) (x - D x / (2 (4+m))): a double xpay variant on each
     * parity, recon 18 where built, else 12 (exact for SU(3) links) */
    static const char *names[2][2] = {
        {"dslash_d_r18_gf0_dag0_xpay1_n1", "dslash_d_r12_gf0_dag0_xpay1_n1"},
        {"dslash_d_r18_gf0_dag1_xpay1_n1", "dslash_d_r12_gf0_dag1_xpay1_n1"}};
    const double a = -0.5 / (4.0 + mass);
    wd_status st = WD_ERR_NOT_BUILT;
    Py_BEGIN_ALLOW_THREADS
    for (int k = 0; k < 2 && st == WD_ERR_NOT_BUILT; k++) {
        st = WD_OK;
        for (int parity = 0; parity < 2 && st == WD_OK; parity++)
            st = wd_dslash_cpu(names[dagger][k], out.buf, u.buf, x.buf, x.buf, a, dims, parity,
                               (wd_time_bc)tbc, 0);
    }
    if (st == WD_OK) {
        double *o = out.buf;
        for (size_t i = 0; i < vol * 24; i++)
            o[i] *= 4.0 + mass;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&u);
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    if (st != WD_OK)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *stats_dict(wd_status st, const wd_solver_stats *stats)
{
    PyObject *d = Py_BuildValue("{s:s, s:i, s:i, s:i, s:d, s:d, s:d, s:d, s:d}", "status",
                                wd_status_string(st), "iterations", stats->iterations,
                                "sloppy_iterations", stats->sloppy_iterations, "updates",
                                stats->updates, "true_residual", stats->true_residual, "seconds",
                                stats->seconds, "solve_seconds", stats->solve_seconds, "gflops",
                                stats->gflops, "flops", stats->flops);
    if (d && !add_mg_stats(d, stats)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *py_propagator(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *u_o, *dims_o, *set_o, *out_o, *mg_o = Py_None;
    int wall, site[4], dims[4];
    if (!PyArg_ParseTuple(args, "OOOp(iiii)O|O", &u_o, &dims_o, &set_o, &wall, &site[0], &site[1],
                          &site[2], &site[3], &out_o, &mg_o) ||
        !parse_dims(dims_o, dims))
        return NULL;
    wd_solver_settings s;
    wd_mg_settings mg;
    if (!parse_settings(set_o, &s) || (mg_o != Py_None && !parse_mg(mg_o, &mg)))
        return NULL;
    wd_lattice lat;
    wd_status st = wd_lattice_make(&lat, dims, NULL);
    if (st != WD_OK)
        return raise_status(st);
    const size_t vol = wd_volume(dims);
    Py_buffer u, out;
    if (!get_field(u_o, &u, 0, vol * 36, "propagator gauge field"))
        return NULL;
    if (!get_field(out_o, &out, 1, vol * 144, "propagator out")) {
        PyBuffer_Release(&u);
        return NULL;
    }
    wd_source src = {wall ? WD_SOURCE_WALL : WD_SOURCE_POINT, {site[0], site[1], site[2], site[3]}};
    wd_solver_stats stats[12];
    memset(stats, 0, sizeof stats);
    Py_BEGIN_ALLOW_THREADS
    st = wd_propagator_mg(out.buf, u.buf, &lat, &src, &s, mg_o != Py_None ? &mg : NULL, NULL,
                          stats);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&u);
    PyBuffer_Release(&out);
    if (st != WD_OK)
        return raise_status(st);
    PyObject *l = PyList_New(12);
    for (int k = 0; l && k < 12; k++) {
        PyObject *d = stats_dict(WD_OK, &stats[k]);
        if (!d) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, k, d);
    }
    return l;
}

static PyObject *py_meson_correlators(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *p_o, *dims_o, *out_o;
    int t0, dims[4];
    if (!PyArg_ParseTuple(args, "OOiO", &p_o, &dims_o, &t0, &out_o) || !parse_dims(dims_o, dims))
        return NULL;
    wd_lattice lat;
    wd_status st = wd_lattice_make(&lat, dims, NULL);
    if (st != WD_OK)
        return raise_status(st);
    Py_buffer p, out;
    if (!get_field(p_o, &p, 0, wd_volume(dims) * 144, "meson_correlators propagator"))
        return NULL;
    if (PyObject_GetBuffer(out_o, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&p);
        return NULL;
    }
    if ((size_t)out.len != sizeof(double) * WD_MESON_COUNT * (size_t)dims[3]) {
        PyBuffer_Release(&p);
        PyBuffer_Release(&out);
        return PyErr_Format(PyExc_ValueError, "meson_correlators: out must hold %d doubles",
                            WD_MESON_COUNT * dims[3]);
    }
    Py_BEGIN_ALLOW_THREADS
    st = wd_meson_correlators(out.buf, p.buf, &lat, t0);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&p);
    PyBuffer_Release(&out);
    if (st != WD_OK)
        return raise_status(st);
    PyObject *l = PyList_New(WD_MESON_COUNT);
    for (int m = 0; l && m < WD_MESON_COUNT; m++) {
        int sign;
        const char *name = wd_meson_name(m, &sign);
        PyList_SET_ITEM(l, m, Py_BuildValue("(si)", name, sign));
    }
    return l;
}

static PyObject *py_variants(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < wd_variant_count_built(); i++) {
        PyObject *s = PyUnicode_FromString(wd_variant_name(i));
        if (!s || PyList_Append(l, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(s);
    }
    return l;
}

static PyObject *py_backend_ok(PyObject *self, PyObject *args)
{
    (void)self;
    int cuda;
    if (!PyArg_ParseTuple(args, "p", &cuda))
        return NULL;
    const wd_status st = wd_backend_probe(cuda ? WD_BACKEND_CUDA : WD_BACKEND_CPU);
    return Py_BuildValue("(Os)", st == WD_OK ? Py_True : Py_False,
                         st == WD_OK ? "" : wd_last_error());
}

static PyMethodDef methods[] = {
    {"gauge_header", py_gauge_header, METH_VARARGS, "header of a NERSC or ILDG file"},
    {"gauge_read", py_gauge_read, METH_VARARGS, "read a gauge file into a buffer"},
    {"gauge_write", (PyCFunction)(void (*)(void))py_gauge_write, METH_VARARGS | METH_KEYWORDS,
     "write a gauge file"},
    {"gauge_generate", py_gauge_generate, METH_VARARGS, "hot start and heatbath sweeps"},
    {"gauge_observables", py_gauge_observables, METH_VARARGS, "plaquettes and link trace"},
    {"solver_create", py_solver_create, METH_VARARGS, "a solver for one gauge field"},
    {"solver_mg_setup", py_solver_mg_setup, METH_VARARGS, "set up the solver's multigrid"},
    {"solver_solve", py_solver_solve, METH_VARARGS, "one solve"},
    {"solver_solve_device", py_solver_solve_device, METH_VARARGS,
     "one solve on CUDA arrays (DLPack)"},
    {"solver_solve_many_device", py_solver_solve_many_device, METH_VARARGS,
     "N sources on CUDA arrays (DLPack) in one lock-step batch"},
    {"solver_solve_many", py_solver_solve_many, METH_VARARGS,
     "N sources in one lock-step batch"},
    {"apply", py_apply, METH_VARARGS, "out = M x or M^dag x in double on the CPU"},
    {"propagator", py_propagator, METH_VARARGS, "the 12 columns of a point or wall source"},
    {"meson_correlators", py_meson_correlators, METH_VARARGS, "zero-momentum meson C(t)"},
    {"variants", py_variants, METH_NOARGS, "the built Dslash variants"},
    {"backend_ok", py_backend_ok, METH_VARARGS, "can this process use the backend"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core",
                                    "wdirac's C library, through the public API", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    wd_py_error = PyErr_NewException("wdirac._core.Error", PyExc_RuntimeError, NULL);
    if (!wd_py_error || PyModule_AddObject(m, "Error", wd_py_error) < 0) {
        Py_XDECREF(wd_py_error);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(wd_py_error);
    return m;
}
