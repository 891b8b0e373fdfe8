#!/usr/bin/env python3
"""bench/scaling_model.py [--markdown] [--projected] [--nic-gbs G] [--latency-us L]
[--pack-us P] [--sizes N,N,...]: the strong-scaling
model of docs/multi-gpu.md ("Scaling past one node"), for issue 28 item 7.

Predicts the time of one Wilson Dslash (recon 12, no gauge fixing, one
parity's output: the `bench dslash` call) of 64^3x128 and 96^3x192 on 8 to
1024 H100s, 8 a node, from what this repository measured on one node and
from published link speeds.  Every number the model starts from is below,
with its source; nothing is fitted to the answer.

  compute   t_k(Vh) = T0 + c Vh, Vh the rank's output sites (half its block).
            c: the 1-GPU 48^3x96 call of issue 28's table (H100, commit
            502b427: 2445, 1116, 621 us for d, s, h) less T0, per site.
            T0: the launch floor, the intercept of a least-squares line
            through the H100 sweep of 24^3 x T, T = 8..128
            (bench/results/h100-2026-11-22/bench-sweep.json).
  exchange  for each partitioned dimension mu two faces of Vh / L_mu sites,
            F bytes a site (24 reals and half's norm: 192, 96, 52 bytes;
            --projected: 12 reals, 96, 48, 28, as QUDA's spin projection).
            pack:  P0 + bytes / BPACK, the gather and scatter kernels, the
                   status agreement and the launches: a line through the
                   measured serial exchange less NCCL alone at 48^3x96, T
                   split (docs/multi-gpu.md, nvidia-h100-x2, commit 07a43c4:
                   53.9, 33.6, 29.5 us for 21.2, 10.6, 5.75 MB sent).
            wire:  per rank, the faces to neighbours on its node over
                   NVLink: the H100 NCCL sweep itself (same run; 2 faces
                   out a rank, 4 KiB to 16 MiB a face), read at the rank's
                   bytes, linearly between its points, its 22.4 us floor
                   below them and, above them, the slope of a least-squares
                   line through its points from 1 MiB (259 GB/s); and
                   the faces to other nodes over InfiniBand, L_IB + bytes /
                   B_IB, B_IB = 4 x 400 Gb/s a node shared by its 8 GPUs
                   (25 GB/s a GPU each way), L_IB = L_NV + 5 us (an
                   assumption: NCCL's floor measured on NVLink plus the
                   network's latency; not measured here); the two kinds in
                   one NCCL group, so the wire time is the larger.  The
                   slowest rank counts.  Ranks fill nodes in rank order (x
                   fastest, 8 consecutive ranks a node), as mpirun places
                   them.
  serial    t = t_k + pack + wire  (the exchange before the kernel: the
            code before 2e48d63 on any grid but T alone)
  overlap   t = max(t_k(interior), pack + wire) + t_k(boundary), the
            interior the sites with no neighbour across a partitioned face
            (prod (L_mu - 2) / L_mu of them): QUDA's interior / exterior
            split, an ideal that ignores the exchange's kernels slowing the
            interior (measured: the reason the T split's overlap hides only
            40-50% on two GPUs).
  grid      for each GPU count the grid, of those whose local extents are
            even and >= 4, with the shortest serial time.
  efficiency  (c V / 2 / N) / t: the time the per-site rate of one large
            GPU would take, over the predicted time.

Before the tables, the model is set beside what was measured on 2 and 4
H100s at 48^3x96 (issue 28's table, docs/multi-gpu.md).

Python 3 standard library only.  --markdown prints the tables of
docs/multi-gpu.md; --nic-gbs changes the GB/s each way a GPU gets to other
nodes (default 25.0: 4 x 400 Gb/s a node; 50.0 is DGX H100's 8 x 400 Gb/s);
--latency-us sets both wire latencies and --pack-us the pack's fixed cost
(what-if: GPU-initiated communication, which no measurement here backs);
--sizes picks the GPU counts.
"""
import argparse
import itertools
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SWEEP = os.path.join(HERE, "results", "h100-2026-11-22", "bench-sweep.json")
PRECS = ("d", "s", "h")

# issue 28's table: 1 H100, 48^3x96, dslash_[dsh]_r12_gf0_dag0_xpay0_n1, us a call
ONE_GPU_48 = {"d": 2445.0, "s": 1116.0, "h": 621.0}
# ... and on 2 and 4 H100s (nvidia-h100-x4, commit 502b427): T split (overlapped)
# and Z x T (serial); nvidia-h100-x2's Z split (serial, docs/multi-gpu.md)
MEASURED_48 = [
    ("2 GPUs, T split (overlapped)", (1, 1, 1, 2), "overlap", {"d": 1326.0, "s": 625.0, "h": 364.0}),
    ("4 GPUs, T split (overlapped)", (1, 1, 1, 4), "overlap", {"d": 714.0, "s": 355.0, "h": 217.0}),
    ("2 GPUs, Z split (serial; h100-x2)", (1, 1, 2, 1), "serial",
     {"d": 1451.49, "s": 735.46, "h": 438.30}),
    ("4 GPUs, Z x T split (serial)", (1, 1, 2, 2), "serial", {"d": 812.0, "s": 421.0, "h": 267.0}),
    # run53 (nvidia-h100-x4, commit 2e48d63: the overlap on every grid; the
    # copy-engine route, not NCCL; its 1-GPU call 2449.2, 1116.0, 622.4 us)
    ("4 GPUs, Z x T split (overlapped; copies, 2e48d63)", (1, 1, 2, 2), "overlap",
     {"d": 680.7, "s": 333.1, "h": 196.2}),
]

# NCCL send/recv, 2 H100s over NV18 (docs/multi-gpu.md, nvidia-h100-x2,
# commit 07a43c4): bytes a face, us for 2 faces out and 2 in a rank
NCCL_SWEEP = [(4096, 22.38), (16384, 24.14), (65536, 25.82), (262144, 30.66),
              (1048576, 42.88), (2875392, 58.96), (4194304, 74.27), (5308416, 84.00),
              (10616832, 124.62), (16777216, 165.44)]

# the serial exchange less NCCL alone, 48^3x96 T split, gf0 rows (same run):
# bytes sent a rank, us
PACK_POINTS = [(21233664, 178.5 - 124.6), (10616832, 117.6 - 84.0), (5750784, 88.5 - 59.0)]

FACE_BYTES = {"d": 192, "s": 96, "h": 52}
FACE_BYTES_PROJECTED = {"d": 96, "s": 48, "h": 28}
GPUS_PER_NODE = 8
NIC_GBS_PER_GPU = 4 * 400 / 8 / GPUS_PER_NODE   # 4 x 400 Gb/s a node, GB/s a GPU each way
IB_EXTRA_LATENCY_US = 5.0                       # assumption (docstring)


def fit_line(points):
    """least-squares y = a + b x"""
    n = len(points)
    sx = sum(p[0] for p in points)
    sy = sum(p[1] for p in points)
    sxx = sum(p[0] * p[0] for p in points)
    sxy = sum(p[0] * p[1] for p in points)
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - b * sx) / n, b


def launch_floor():
    """T0 per precision: the intercept of us against Vh over the 24^3 x T sweep"""
    with open(SWEEP) as f:
        rows = json.load(f)["results"]
    t0 = {}
    for p in PRECS:
        pts = [(r["dims"][0] * r["dims"][1] * r["dims"][2] * r["dims"][3] / 2, r["us_per_call"])
               for r in rows if r["variant"] == f"dslash_{p}_r12_gf0_dag0_xpay0"]
        t0[p] = fit_line(pts)[0]
    return t0


class Model:
    def __init__(self, projected=False, nic_gbs=NIC_GBS_PER_GPU, latency_us=None, pack_us=None):
        self.t0 = launch_floor()
        vh48 = 48 ** 3 * 96 / 2
        self.c = {p: (ONE_GPU_48[p] - self.t0[p]) / vh48 for p in PRECS}   # us a site
        a, b = fit_line([(2 * s, us) for s, us in NCCL_SWEEP if s >= 1048576])
        self.b_nv = 1.0 / b / 1e3                                         # GB/s, marginal
        self.l_nv = None                                                  # the sweep's own
        a, b = fit_line(PACK_POINTS)
        self.p0, self.b_pack = a, 1.0 / b / 1e3
        self.floor_nv = min(us for _, us in NCCL_SWEEP)
        self.l_ib = self.floor_nv + IB_EXTRA_LATENCY_US
        self.b_ib = nic_gbs
        if latency_us is not None:
            self.l_nv = self.l_ib = latency_us
        if pack_us is not None:
            self.p0 = pack_us
        self.face = FACE_BYTES_PROJECTED if projected else FACE_BYTES

    def nvlink(self, sent):
        """us for `sent` bytes out of a rank over NVLink (the sweep, module comment)"""
        if self.l_nv is not None:
            return self.l_nv + sent / self.b_nv / 1e3
        pts = [(2 * f, us) for f, us in NCCL_SWEEP]
        if sent <= pts[0][0]:
            return pts[0][1]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if sent <= x1:
                return y0 + (y1 - y0) * (sent - x0) / (x1 - x0)
        return pts[-1][1] + (sent - pts[-1][0]) / self.b_nv / 1e3

    def compute(self, p, vh):
        return self.t0[p] + self.c[p] * vh

    def exchange(self, p, dims, grid):
        """(pack us, wire us, bytes sent a rank) of the slowest rank"""
        local = [dims[m] // grid[m] for m in range(4)]
        vh = local[0] * local[1] * local[2] * local[3] / 2
        nranks = grid[0] * grid[1] * grid[2] * grid[3]
        face = {m: vh / local[m] * self.face[p] for m in range(4) if grid[m] > 1}
        total = 2 * sum(face.values())
        worst = 0.0
        # one rank per distinct position within a node suffices: the node's
        # ranks are consecutive, so look at the ranks of one or two nodes
        for r in range(min(nranks, 2 * GPUS_PER_NODE)):
            c = [r % grid[0], r // grid[0] % grid[1], r // (grid[0] * grid[1]) % grid[2],
                 r // (grid[0] * grid[1] * grid[2])]
            on = off = 0.0
            for m in face:
                for step in (1, -1):
                    n = list(c)
                    n[m] = (n[m] + step) % grid[m]
                    nr = n[0] + grid[0] * (n[1] + grid[1] * (n[2] + grid[2] * n[3]))
                    if nr // GPUS_PER_NODE == r // GPUS_PER_NODE:
                        on += face[m]
                    else:
                        off += face[m]
            wire = 0.0
            if on:
                wire = self.nvlink(on)
            if off:
                wire = max(wire, self.l_ib + off / self.b_ib / 1e3)
            worst = max(worst, wire)
        pack = self.p0 + total / self.b_pack / 1e3 if face else 0.0
        return pack, worst, total

    def predict(self, p, dims, grid):
        local = [dims[m] // grid[m] for m in range(4)]
        vh = local[0] * local[1] * local[2] * local[3] / 2
        tk = self.compute(p, vh)
        pack, wire, sent = self.exchange(p, dims, grid)
        exch = pack + wire
        interior = 1.0
        for m in range(4):
            if grid[m] > 1:
                interior *= max(local[m] - 2, 0) / local[m]
        t_int = self.compute(p, vh * interior) if interior > 0 else 0.0
        t_ext = self.compute(p, vh * (1 - interior)) if interior < 1 else 0.0
        overlap = max(t_int, exch) + t_ext if exch else tk
        return {"grid": grid, "local": local, "vh": vh, "compute": tk, "pack": pack,
                "wire": wire, "exchange": exch, "serial": tk + exch, "overlap": overlap,
                "sent": sent}


def grids(dims, n):
    """every (Px, Py, Pz, Pt) of product n with local extents even and >= 4"""
    divs = [d for d in range(1, n + 1) if n % d == 0]
    for g in itertools.product(divs, repeat=4):
        if g[0] * g[1] * g[2] * g[3] != n:
            continue
        if all(dims[m] % g[m] == 0 and dims[m] // g[m] % 2 == 0 and dims[m] // g[m] >= 4
               for m in range(4)):
            yield g


def best(model, p, dims, n):
    return min((model.predict(p, dims, g) for g in grids(dims, n)),
               key=lambda r: (r["serial"], r["grid"][::-1]))


def fmt_grid(g):
    return "x".join(str(x) for x in g)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true", help="markdown tables")
    ap.add_argument("--projected", action="store_true",
                    help="faces of 12 reals a site (spin projection) instead of 24")
    ap.add_argument("--nic-gbs", type=float, default=NIC_GBS_PER_GPU,
                    help="GB/s each way a GPU gets to other nodes (default %(default)s)")
    ap.add_argument("--latency-us", type=float, help="both wire latencies (what-if)")
    ap.add_argument("--pack-us", type=float, help="the pack's fixed cost P0 (what-if)")
    ap.add_argument("--sizes", default="8,16,32,64,128,256,512,1024",
                    help="GPU counts (default %(default)s)")
    a = ap.parse_args()
    m = Model(projected=a.projected, nic_gbs=a.nic_gbs, latency_us=a.latency_us,
              pack_us=a.pack_us)
    sizes = [int(x) for x in a.sizes.split(",")]

    print("Model parameters (bench/scaling_model.py):")
    print("  launch floor T0 (24^3xT sweep): " +
          ", ".join(f"{p} {m.t0[p]:.1f} us" for p in PRECS))
    print("  per output site c (1 GPU 48^3x96 less T0): " +
          ", ".join(f"{p} {m.c[p] * 1e3:.4f} ns" for p in PRECS))
    if m.l_nv is None:
        print(f"  NVLink: the NCCL sweep, floor {m.floor_nv:.1f} us, beyond 16 MiB faces "
              f"{m.b_nv:.0f} GB/s out a rank")
    else:
        print(f"  NVLink: L_NV {m.l_nv:.1f} us, {m.b_nv:.0f} GB/s out a rank")
    print(f"  pack (serial exchange less NCCL): P0 {m.p0:.1f} us, {m.b_pack:.0f} GB/s of faces")
    if a.latency_us is not None or a.pack_us is not None:
        print("  what-if: " + ", ".join(x for x in (
            f"latencies {a.latency_us} us" if a.latency_us is not None else "",
            f"P0 {a.pack_us} us" if a.pack_us is not None else "") if x))
    print(f"  InfiniBand: L_IB {m.l_ib:.1f} us (assumed), B_IB {m.b_ib:.1f} GB/s a GPU each way")
    print(f"  face bytes a site: " + ", ".join(f"{p} {m.face[p]}" for p in PRECS) +
          (" (projected)" if a.projected else " (full spinors, as the code sends today)"))
    print()

    print("Against the measured 48^3x96 runs (H100; us a call, model / measured):")
    if a.markdown:
        print()
        print("| run | grid | d model | d measured | s model | s measured | h model | h measured |")
        print("|---|---|---|---|---|---|---|---|")
    for name, g, kind, meas in MEASURED_48:
        cells = []
        for p in PRECS:
            r = m.predict(p, (48, 48, 48, 96), g)
            cells += [f"{r[kind]:.0f}", f"{meas[p]:.0f}"]
        if a.markdown:
            print(f"| {name} | {fmt_grid(g)} | " + " | ".join(cells) + " |")
        else:
            print(f"  {name:36s} {fmt_grid(g):8s} " +
                  "  ".join(f"{p} {cells[2 * i]} / {cells[2 * i + 1]}"
                            for i, p in enumerate(PRECS)))
    print()

    for dims in ((64, 64, 64, 128), (96, 96, 96, 192)):
        name = f"{dims[0]}^3x{dims[3]}"
        vh_all = dims[0] * dims[1] * dims[2] * dims[3] / 2
        print(f"{name}: Dslash us a call, strong scaling on H100s, 8 a node")
        if a.markdown:
            print()
            print("| GPUs | prec | grid | local | compute us | exchange us (pack + wire) | "
                  "serial us | efficiency | overlapped us | efficiency | speedup over "
                  f"{sizes[0]}, overlapped |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
        else:
            print(f"  {'GPUs':>5} {'p':1} {'grid':>9} {'local':>12} {'compute':>8} "
                  f"{'exchange':>19} {'serial':>8} {'eff':>5} {'overlap':>8} {'eff':>5} "
                  f"{'x over ' + str(sizes[0]):>8}")
        base = {}
        for n in sizes:
            for p in PRECS:
                r = best(m, p, dims, n)
                ideal = m.c[p] * vh_all / n
                if p not in base:
                    base[p] = (n, r["overlap"])
                loc = "x".join(str(x) for x in r["local"])
                exch = f"{r['exchange']:.0f} ({r['pack']:.0f} + {r['wire']:.0f})"
                row = (n, p, fmt_grid(r["grid"]), loc, f"{r['compute']:.0f}", exch,
                       f"{r['serial']:.0f}", f"{100 * ideal / r['serial']:.0f}%",
                       f"{r['overlap']:.0f}", f"{100 * ideal / r['overlap']:.0f}%",
                       f"{base[p][1] / r['overlap'] * base[p][0] / sizes[0]:.1f}x")
                if a.markdown:
                    print("| " + " | ".join(str(x) for x in row) + " |")
                else:
                    print(f"  {row[0]:>5} {row[1]:1} {row[2]:>9} {row[3]:>12} {row[4]:>8} "
                          f"{row[5]:>19} {row[6]:>8} {row[7]:>5} {row[8]:>8} {row[9]:>5} "
                          f"{row[10]:>8}")
        print()


if __name__ == "__main__":
    main()
