"""wdirac for Python: Wilson-Dirac solves on numpy arrays.

    import numpy as np, wdirac
    u = wdirac.GaugeField.generate((8, 8, 8, 16), beta=6.0, sweeps=20, seed=1)
    solver = wdirac.Solver(u, kappa=0.155, precision="d", sloppy="s")
    b = np.zeros(u.spinor_shape, complex); b[0, 0, 0, 0, 0, 0] = 1
    x, stats = solver.solve(b)

Conventions (DESIGN.md): gauge arrays are complex128 of shape
(T, Z, Y, X, 4, 3, 3) (direction x, y, z, t, then row, column), spinors
(T, Z, Y, X, 4, 3) (DeGrand-Rossi spin, colour), both C-contiguous;
M = (4 + m) - D/2 with kappa = 1 / (2 (4 + m)).  Every failure of the C
library raises wdirac.Error with its status and message; arrays of the
wrong shape, dtype or memory order raise ValueError or TypeError before
anything runs.  Solves and heatbath sweeps release the GIL.

docs/python.md has a worked example from nothing to a pion mass.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from . import _core

__all__ = ["Error", "GaugeField", "Solver", "SolveStats", "MGSetupStats", "variants",
           "cuda_available", "propagator", "meson_correlators"]

_PRECISION = {"d": 8, "s": 4, "h": 2}
_SOLVER = {"cg": 1, "bicgstab": 2, "mg": 3}
_MG_CYCLE = {"v": 0, "k": 1}
_MG_SMOOTHER = {"mr": 0, "ca-gcr": 1}
# wd_mg_settings' fields that take a number (block, nvec, cycle and smoother are converted)
_MG_NUMBERS = ("levels", "setup_tol", "setup_max_iter", "pre_smooth", "post_smooth",
               "coarse_tol", "coarse_max_iter", "gcr_nkrylov", "seed", "verbosity",
               "diagnostics", "coarse_eo", "outer_eo", "lock_step", "refine_passes",
               "refine_iter")
_MIXED = {"none": 0, "reliable": 1, "defect": 2}
_ACCUM = {"auto": 0, "sloppy": 1, "outer": 2}
_TBC = {"periodic": 1, "antiperiodic": -1}
_CLOVER_FORM = {"symmetric": 0, "asymmetric": 1}


class Error(RuntimeError):
    """A failure of the C library: .status ('invalid argument', ...), .code
    (the wd_status number) and .message (the library's message)."""

    def __init__(self, status: str, code: int, message: str):
        super().__init__(f"{message} [{status}]")
        self.status, self.code, self.message = status, code, message


def _call(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except _core.Error as e:
        raise Error(*e.args) from None


def variants() -> list:
    """The Dslash variants this build of the library holds."""
    return _core.variants()


def cuda_available() -> Tuple[bool, str]:
    """(True, '') when this process can use a GPU, else (False, why)."""
    return _core.backend_ok(True)


def _dims_of(shape: Sequence[int]) -> Tuple[int, int, int, int]:
    t, z, y, x = shape[:4]
    return (int(x), int(y), int(z), int(t))


def _on_gpu(a) -> bool:
    """Whether a is a CUDA array that speaks DLPack (CuPy, PyTorch)."""
    if isinstance(a, np.ndarray) or not hasattr(a, "__dlpack_device__"):
        return False
    return a.__dlpack_device__()[0] == 2    # kDLCUDA


def _field(a, shape: Tuple[int, ...], what: str) -> np.ndarray:
    """The array itself when it is complex128, C-contiguous and of `shape`."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what}: need a numpy.ndarray, got {type(a).__name__}")
    if a.dtype != np.complex128:
        raise TypeError(f"{what}: dtype {a.dtype}, need complex128")
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{what}: shape {a.shape}, need {tuple(shape)}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{what}: not C-contiguous (use numpy.ascontiguousarray)")
    return a


class GaugeField:
    """An SU(3) gauge field on the host: .array is (T, Z, Y, X, 4, 3, 3)
    complex128, .dims (X, Y, Z, T)."""

    def __init__(self, array: np.ndarray):
        if not isinstance(array, np.ndarray) or array.ndim != 7 or array.shape[4:] != (4, 3, 3):
            raise ValueError("GaugeField: need an array of shape (T, Z, Y, X, 4, 3, 3)")
        self.array = _field(array, array.shape, "GaugeField")
        self.dims = _dims_of(array.shape)
        _call(_core.gauge_observables, self.array, self.dims)   # checks the extents

    @property
    def spinor_shape(self) -> Tuple[int, ...]:
        """The shape of a spinor on this lattice: (T, Z, Y, X, 4, 3)."""
        return self.array.shape[:4] + (4, 3)

    @classmethod
    def load(cls, path: str) -> "GaugeField":
        """Read a NERSC or ILDG file (the format from its first bytes),
        checked as `wdirac gauge info` checks it."""
        h = _call(_core.gauge_header, str(path))
        x, y, z, t = h["dims"]
        a = np.empty((t, z, y, x, 4, 3, 3), np.complex128)
        _call(_core.gauge_read, str(path), (x, y, z, t), a)
        return cls(a)

    def save(self, path: str, format: str = "nersc", precision: int = 64,
             two_row: bool = False, little_endian: bool = False,
             overwrite: bool = False) -> None:
        """Write a NERSC or ILDG file through wdirac's safe write (an existing
        file is refused unless overwrite)."""
        _call(_core.gauge_write, str(path), self.array, self.dims, format=format,
              precision=precision, two_row=two_row, little_endian=little_endian,
              overwrite=overwrite)

    @classmethod
    def generate(cls, dims: Sequence[int], beta: float, sweeps: int, seed: int = 1,
                 n_or: int = 4, backend: str = "cpu") -> "GaugeField":
        """A quenched configuration: a hot start, then `sweeps` compound
        heatbath sweeps (one heatbath, n_or overrelaxation) at coupling beta,
        on the CPU or the GPU ('cuda'); the same seed gives the same field on
        either.  dims = (X, Y, Z, T)."""
        x, y, z, t = (int(d) for d in dims)
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"backend '{backend}': must be 'cpu' or 'cuda'")
        a = np.empty((t, z, y, x, 4, 3, 3), np.complex128)
        _call(_core.gauge_generate, a, (x, y, z, t), float(beta), int(sweeps), int(seed),
              int(n_or), backend == "cuda")
        return cls(a)

    def observables(self) -> dict:
        """plaquette (and its space and time parts), link trace, Polyakov loop."""
        return _call(_core.gauge_observables, self.array, self.dims)

    def plaquette(self) -> float:
        """Re tr P / 3 averaged over all plaquettes."""
        return self.observables()["plaquette"]


@dataclasses.dataclass
class SolveStats:
    """What one solve did: the true residual is ||b - M x|| / ||b|| on the
    full lattice in double, seconds host source to host solution."""
    status: str
    iterations: int
    sloppy_iterations: int
    updates: int
    true_residual: float
    solver_residual: float
    seconds: float
    solve_seconds: float
    gflops: float
    flops: float
    bytes_allocated: int
    message: str = ""
    call_seconds: float = 0.0   # wall time of the C call (one solve; 0 in a batch)
    # multigrid solves (solver 'mg'): iterations is the outer flexible GCR's;
    # mg_iterations one count a level, [0] the fine smoother's steps, [l] the
    # Krylov iterations on coarse level l, summed over every cycle
    mg_levels: int = 0
    mg_iterations: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class MGSetupStats:
    """What a multigrid setup (wd_solver_mg_setup) did: seconds and its cost
    in fine-operator applications; dims, each level's extents (the fine one
    first); and for each level above the coarsest, setup_residual (the
    largest |A^dag A v| / |A^dag A v0| of its relaxed null vectors), setup_unconverged
    (relaxations that stopped at setup_max_iter above setup_tol),
    orth_error (||P^dag P - 1||) and coarse_error
    (||D_c v - P^dag A P v|| / ||D_c v|| on a random v): NaN unless the
    settings ask for diagnostics (or verbosity >= 1), which took
    diagnostics_seconds of the seconds; refine_seconds the refinement
    passes' part, refine_residual the last pass's largest |v - A x| / |v|
    (NaN without passes)."""
    seconds: float
    refine_seconds: float
    refine_residual: float
    diagnostics_seconds: float
    fine_applies: float
    levels: int
    dims: list
    setup_residual: list
    setup_unconverged: list
    orth_error: list
    coarse_error: list


def _mg_settings(mg) -> dict:
    """The multigrid settings for the C layer from a dict of wd_mg_settings'
    field names: block as B, (X, Y, Z, T) or a list of those (one a level,
    the fine one first), nvec as N or a list, cycle 'v' or 'k', smoother
    'mr' or 'ca-gcr'; missing
    keys keep the library's defaults (wd_mg_default_settings)."""
    if not isinstance(mg, dict):
        raise TypeError(f"mg: need a dict of multigrid settings, got {type(mg).__name__}")
    out = {}
    for key, value in mg.items():
        if key == "block":
            def one(b):
                if isinstance(b, (int, np.integer)):
                    return (int(b),) * 4
                b = tuple(int(v) for v in b)
                if len(b) != 4:
                    raise ValueError(f"mg: a block is B or (X, Y, Z, T), got {b}")
                return b
            if isinstance(value, (int, np.integer)) or (
                    len(value) == 4 and all(isinstance(v, (int, np.integer)) for v in value)):
                value = [value]
            out[key] = [one(b) for b in value]
        elif key == "nvec":
            out[key] = [int(value)] if isinstance(value, (int, np.integer)) else \
                [int(v) for v in value]
        elif key == "cycle":
            if value not in _MG_CYCLE:
                raise ValueError(f"mg: cycle '{value}': must be one of {sorted(_MG_CYCLE)}")
            out[key] = _MG_CYCLE[value]
        elif key == "smoother":
            if value not in _MG_SMOOTHER:
                raise ValueError(f"mg: smoother '{value}': must be one of {sorted(_MG_SMOOTHER)}")
            out[key] = _MG_SMOOTHER[value]
        elif key in _MG_NUMBERS:
            out[key] = value
        elif key in ("save", "load"):
            out[key] = os.fspath(value)
        elif key == "save_overwrite":
            out[key] = int(bool(value))
        else:
            raise KeyError(f"mg: unknown multigrid setting '{key}' (known: block, nvec, cycle, "
                           f"smoother, save, load, save_overwrite, {', '.join(_MG_NUMBERS)})")
    return out


class Solver:
    """A solver for M x = b on one gauge field, uploaded once.

    kappa or mass fixes M; solver 'bicgstab' or 'cg' (on the normal
    equations); precision and sloppy 'd', 's' or 'h'; mixed 'reliable',
    'defect' or 'none'; backend 'auto' (the GPU when usable), 'cpu' or
    'cuda'.  csw > 0 adds the clover term (M_sw = M + c_sw (i/4) sigma F,
    DESIGN.md), clover_form 'symmetric' (default) or 'asymmetric' its
    even-odd form.  Further keywords are wd_solver_settings fields (delta,
    tol_inner, max_iter, recon, sloppy_recon, gauge_fix, sloppy_gauge_fix,
    max_stall, divergence, accumulator, tbc, pad, verbosity).

    mg (a dict; solver='mg' alone takes the defaults) solves with the
    multigrid instead (flexible GCR preconditioned by its cycle, on the
    solver's backend and process grid): keys are wd_mg_settings'
    fields, levels, block (B, (X, Y, Z, T) or a list of those, one a level
    from the fine one down), nvec (N or a list), setup_tol,
    setup_max_iter, pre_smooth, post_smooth, smoother ('mr' or 'ca-gcr'),
    cycle ('v' or 'k'),
    coarse_tol, coarse_max_iter, gcr_nkrylov, seed, verbosity,
    diagnostics (1: the float64 checks of .mg_stats, else NaN), coarse_eo
    (0: the coarsest GCR on the whole operator, not even-odd), outer_eo
    (1: the outer GCR on the even-odd Schur system of the fine level,
    QUDA's direct-pc, the default; 0 on the full system), lock_step
    (the most right-hand sides of a propagator whose outer GCRs go in
    lock step, their coarse solves batched; 0 all, 1 one at a time),
    refine_passes and refine_iter (adaptive refinement passes after the
    setup, each the outer iterations of its solves), save and
    load (a file of the null vectors: written after the setup, or read
    instead of relaxing them; save_overwrite=True replaces a file); missing
    keys keep the library's defaults.  The setup runs once, here, for this
    mass (.mg_stats: MGSetupStats); every solve uses it, and its stats
    give mg_levels and mg_iterations.  solve(b, solver='bicgstab') still
    solves by Krylov on the same solver; a solve at another mass raises
    Error (call setup_mg again for it).
    """

    def __init__(self, gauge: GaugeField, kappa: Optional[float] = None,
                 mass: Optional[float] = None, solver: str = "bicgstab",
                 precision: str = "d", sloppy: str = "s", mixed: str = "reliable",
                 tol: float = 1e-10, backend: str = "auto", mg: Optional[dict] = None,
                 **settings):
        if not isinstance(gauge, GaugeField):
            raise TypeError("Solver: gauge must be a wdirac.GaugeField")
        if (kappa is None) == (mass is None):
            raise ValueError("Solver: give kappa or mass (one of them)")
        self.gauge = gauge      # the C solver borrows its array: keep it alive
        self.mass = float(mass) if mass is not None else 1.0 / (2.0 * float(kappa)) - 4.0
        self.kappa = 1.0 / (2.0 * (4.0 + self.mass))
        if backend == "auto":
            backend = "cuda" if cuda_available()[0] else "cpu"
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"backend '{backend}': must be 'auto', 'cpu' or 'cuda'")
        self.backend = backend
        s = {"mass": self.mass, "tol": float(tol), "backend": 1 if backend == "cuda" else 0}
        for key, table, value in (("solver", _SOLVER, solver), ("precision", _PRECISION, precision),
                                  ("sloppy_precision", _PRECISION, sloppy),
                                  ("mixed", _MIXED, mixed)):
            if value not in table:
                raise ValueError(f"{key} '{value}': must be one of {sorted(table)}")
            s[key] = table[value]
        for key, value in settings.items():
            if key == "tbc" and isinstance(value, str):
                value = _TBC[value]
            elif key == "accumulator" and isinstance(value, str):
                value = _ACCUM[value]
            elif key == "clover_form" and isinstance(value, str):
                if value not in _CLOVER_FORM:
                    raise ValueError(f"clover_form '{value}': must be one of "
                                     f"{sorted(_CLOVER_FORM)}")
                value = _CLOVER_FORM[value]
            s[key] = value
        self.settings = s
        self._solver = _call(_core.solver_create, gauge.array, gauge.dims, s)
        self.mg: Optional[dict] = None              # the multigrid's settings (C field names)
        self.mg_stats: Optional[MGSetupStats] = None
        if mg is not None or solver == "mg":
            self.setup_mg({} if mg is None else mg)

    def setup_mg(self, mg: dict, **changes) -> MGSetupStats:
        """Set up the multigrid (wd_solver_mg_setup: null vectors,
        transfers, coarse operators) for the solver's mass, or for the kappa
        or mass in changes, and solve with it from now on; mg as for
        Solver(mg=...).  Returns (and keeps in .mg_stats) the setup's stats.
        Bad settings (a block that does not divide the lattice, nvec above
        an aggregate's dimension) raise Error naming the level and the
        setting, the solver unchanged."""
        m = _mg_settings(mg)
        s = dict(self.settings)
        if "kappa" in changes:
            s["mass"] = 1.0 / (2.0 * float(changes.pop("kappa"))) - 4.0
        s.update(changes)
        d = _call(_core.solver_mg_setup, self._solver, s, m)
        s["solver"] = _SOLVER["mg"]
        self.settings, self.mg, self.mg_stats = s, m, MGSetupStats(**d)
        self.mass = s["mass"]
        self.kappa = 1.0 / (2.0 * (4.0 + self.mass))
        return self.mg_stats

    def solve(self, b: np.ndarray, progress: Optional[Callable[[int, float], None]] = None,
              **changes) -> Tuple[np.ndarray, SolveStats]:
        """x with M x = b, and the stats.  b is (T, Z, Y, X, 4, 3) complex128,
        or (N, T, Z, Y, X, 4, 3) for N sources: then x has b's shape, stats
        is a list, and the N solves run as one lock-step batch
        (wd_solver_solve_many: each source's x and iterations are those of
        its own solve; seconds are the batch's divided evenly), or one after
        another when progress is given.
        progress(iterations, residual) is called as the solver goes.
        Keywords change per-solve settings (kappa, mass, tol, solver, ...).
        A solve that does not converge raises Error; its .x and .stats hold
        the best iterate and its true residual (for N sources: all of them,
        the error the first failing source's).
        On a solver with backend='cuda', b may be a CUDA array (CuPy,
        PyTorch: anything with __dlpack__) of one source or of N; x is then
        an array of the same library on the GPU, and neither goes through
        host memory (wd_solver_solve_device, wd_solver_solve_many_device)."""
        shape = self.gauge.spinor_shape
        s = dict(self.settings)
        if "kappa" in changes:
            s["mass"] = 1.0 / (2.0 * float(changes.pop("kappa"))) - 4.0
        for key, value in changes.items():
            if key == "solver":
                value = _SOLVER[value]
            elif key == "mixed":
                value = _MIXED[value]
            s[key] = value
        if _on_gpu(b):
            if progress is not None:
                raise ValueError("solve: progress callbacks are for host arrays (a GPU batch "
                                 "reports no progress)")
            return self._solve_device(b, s)
        if isinstance(b, np.ndarray) and b.ndim == 7:
            if progress is not None:
                xs, stats = [], []
                for k in range(b.shape[0]):
                    x, st = self.solve(b[k], progress, **changes)
                    xs.append(x)
                    stats.append(st)
                return np.stack(xs), stats
            b = _field(b, (b.shape[0],) + tuple(shape), "solve b")
            xs = np.empty(b.shape, np.complex128)
            d = _call(_core.solver_solve_many, self._solver, xs, b, b.shape[0], s)
            stats = [SolveStats(**{k: v for k, v in st.items() if k != "code"})
                     for st in d["stats"]]
            if d["code"] != 0:
                err = Error(d["status"], d["code"], d["message"])
                err.x, err.stats = xs, stats
                raise err
            return xs, stats
        b = _field(b, shape, "solve b")
        x = np.empty(shape, np.complex128)
        d = _call(_core.solver_solve, self._solver, x, b, s, progress)
        code = d.pop("code")
        stats = SolveStats(**d)
        if code != 0:
            err = Error(stats.status, code, stats.message)
            # a solve that stopped (diverged, stagnated, iteration limit)
            # still returns its best iterate and its true residual
            err.x, err.stats = x, stats
            raise err
        return x, stats

    def _solve_device(self, b, s) -> Tuple[Any, SolveStats]:
        """b a CUDA array (CuPy, PyTorch, anything with __dlpack__): x is
        made by b's own library (empty_like) and both go to the C library
        through DLPack, so neither crosses to the host."""
        if self.backend != "cuda":
            raise ValueError("solve: b is a GPU array; the solver runs on the CPU backend "
                             "(create it with backend='cuda' or pass a numpy array)")
        library = sys.modules.get(type(b).__module__.split(".")[0])
        if library is None or not hasattr(library, "empty_like"):
            raise TypeError(f"solve: cannot make x for a GPU array of type {type(b).__name__} "
                            "(its module has no empty_like)")
        x = library.empty_like(b)
        if len(b.shape) == 7:
            d = _call(_core.solver_solve_many_device, self._solver, x, b, b.shape[0], s)
            stats = [SolveStats(**{k: v for k, v in st.items() if k != "code"})
                     for st in d["stats"]]
            if d["code"] != 0:
                err = Error(d["status"], d["code"], d["message"])
                err.x, err.stats = x, stats
                raise err
            return x, stats
        d = _call(_core.solver_solve_device, self._solver, x, b, s)
        code = d.pop("code")
        stats = SolveStats(**d)
        if code != 0:
            err = Error(stats.status, code, stats.message)
            err.x, err.stats = x, stats
            raise err
        return x, stats

    def apply(self, x: np.ndarray, dagger: bool = False) -> np.ndarray:
        """M x (or M^dagger x) in double on the CPU, for users' own algorithms
        (the Wilson operator: a solver with a clover term raises Error)."""
        if self.settings.get("csw", 0.0) != 0.0:
            raise Error("invalid argument", 2, "Solver.apply: the clover operator (csw != 0) "
                        "is not offered yet; apply works for csw = 0")
        x = _field(x, self.gauge.spinor_shape, "apply x")
        out = np.empty_like(x)
        _call(_core.apply, self.gauge.array, self.gauge.dims, x, out, self.mass,
              int(self.settings.get("tbc", -1)), bool(dagger))
        return out


def propagator(solver: "Solver", source: str = "point",
               site: Sequence[int] = (0, 0, 0, 0)) -> Tuple[np.ndarray, list]:
    """The 12 columns of M^-1 for a point source at site = (x, y, z, t), or a
    wall source on the time slice site[3], solved with the solver's settings
    (wd_propagator: one solver for all 12; a solver with mg: one multigrid
    setup of its settings for the 12, wd_propagator_mg).  Returns the propagator,
    (T, Z, Y, X, 4, 3, 4, 3) complex128 with sink spin and colour before
    source spin and colour, and the 12 columns' stats (dicts, order 3 spin +
    colour)."""
    if source not in ("point", "wall"):
        raise ValueError(f"source '{source}': must be 'point' or 'wall'")
    u = solver.gauge
    prop = np.empty(u.spinor_shape + (4, 3), np.complex128)
    stats = _call(_core.propagator, u.array, u.dims, solver.settings, source == "wall",
                  tuple(int(c) for c in site), prop, solver.mg)
    return prop, stats


def meson_correlators(prop: np.ndarray, t_source: int = 0) -> dict:
    """Zero-momentum meson two-point functions of a propagator from
    propagator(): {'pseudoscalar': C, 'a4-pseudoscalar': C, 'vector': C,
    'scalar': C}, each C[t] for t counted from the source's time slice
    (wdirac_physics.h gives the definition)."""
    if not isinstance(prop, np.ndarray) or prop.ndim != 8 or prop.shape[4:] != (4, 3, 4, 3):
        raise ValueError("meson_correlators: need a propagator of shape (T, Z, Y, X, 4, 3, 4, 3)")
    _field(prop, prop.shape, "meson_correlators")
    dims = _dims_of(prop.shape)
    out = np.empty((4, dims[3]), np.float64)
    names = _call(_core.meson_correlators, prop, dims, int(t_source), out)
    return {name: out[k].copy() for k, (name, _) in enumerate(names)}
