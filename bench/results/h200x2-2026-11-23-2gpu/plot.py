#!/usr/bin/env python3
"""Plots of the first 2-GPU run (nvidia-h200-x2, programs of commit 9ff8261),
from the JSON beside this file:

  scaling.png  Dslash strong scaling, T split in two: the speedup over one
               GPU with the exchange serial, overlapped (the default), and
               with the exchange taken off entirely (an estimate: the serial
               call less the serial exchange, derived from the "hidden" share)
  nccl.png     the NCCL send/recv exchange alone: two GPUs over NVLink (this
               run) against one GPU exchanging with itself (nvidia-h200,
               ../h200x2-2026-11-23-grid/h200-x1/h200-half-wrapT.json)

python3 plot.py  (matplotlib) writes both next to this file.
"""
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))


def load(name):
    with open(os.path.join(here, name)) as f:
        return json.load(f)


one = {(r["variant"], tuple(r["dims"])): r for r in load("dslash-grid-1gpu.json")["results"]}
two = load("dslash-grid-2gpu.json")
self_sweep = load("../h200x2-2026-11-23-grid/h200-x1/h200-half-wrapT.json")["nccl_exchange"]

lattices = [(32, 32, 32, 64), (48, 48, 48, 96)]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
for ax, dims in zip(axes, lattices):
    rows = [r for r in two["results"] if tuple(r["dims"]) == dims]
    labels, serial, overl, nohalo = [], [], [], []
    for r in rows:
        t1 = one[(r["variant"], dims)]["us_per_call"]
        exch = (r["us_serial_exchange"] - r["us_per_call"]) / r["fraction_of_exchange_hidden"]
        labels.append(r["variant"][7:16].replace("_", " "))
        serial.append(t1 / r["us_serial_exchange"])
        overl.append(t1 / r["us_per_call"])
        nohalo.append(t1 / (r["us_serial_exchange"] - exch))
    x = range(len(rows))
    w = 0.27
    ax.bar([i - w for i in x], serial, w, label="exchange serial", color="#bbbbbb")
    ax.bar(x, overl, w, label="exchange overlapped (default)", color="#1f77b4")
    ax.bar([i + w for i in x], nohalo, w, label="no exchange cost (estimate)", color="#ffffff",
           edgecolor="#1f77b4", hatch="//")
    for i, s in enumerate(overl):
        ax.text(i, s + 0.02, f"{s:.2f}", ha="center", va="bottom", fontsize=8)
    ax.axhline(2.0, color="black", lw=0.8, ls=":")
    ax.axhline(1.85, color="#d62728", lw=1.0, ls="--", label="issue 11 target, 48^3x96 (1.85x)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=0, fontsize=9)
    ax.set_title(f"{dims[0]}^3x{dims[3]} global, T split in two")
    ax.set_ylim(0.8, 2.1)
    ax.grid(axis="y", alpha=0.3)
axes[0].set_ylabel("speedup on 2 GPUs (1-GPU us / 2-GPU us)")
axes[1].legend(loc="lower right", fontsize=8, framealpha=0.95)
fig.suptitle("Dslash strong scaling, recon 12, nvidia-h200-x2 (2 H200, NV18), commit 9ff8261, "
             "median of 100 calls", fontsize=10)
fig.tight_layout()
fig.savefig(os.path.join(here, "scaling.png"), dpi=110)

fig, ax = plt.subplots(figsize=(7, 4.4))
for sweep, label, style in ((two["nccl_exchange"], "2 GPUs over NVLink (nvidia-h200-x2, 9ff8261)", "o-"),
                            (self_sweep, "1 GPU with itself (nvidia-h200, 9656385)", "s--")):
    pts = sorted((e["bytes_per_face"], e["us"]) for e in sweep if not e["halo_face"])
    ax.plot([b for b, _ in pts], [u for _, u in pts], style, label=label)
    faces = [(e["bytes_per_face"], e["us"]) for e in sweep if e["halo_face"]]
    ax.plot([b for b, _ in faces], [u for _, u in faces], "k*", ms=9)
for b, name in ((2875392, "h"), (5308416, "s"), (10616832, "d")):
    ax.axvline(b, color="gray", lw=0.6, ls=":")
    ax.text(b * 1.06, 45, name, ha="left", fontsize=9)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("bytes per face (2 faces out and 2 in per rank)")
ax.set_ylabel("us per exchange (median)")
ax.set_title("NCCL send/recv exchange alone, mu = 3 (stars: the halo faces of 48^3x96)",
             fontsize=10)
ax.grid(alpha=0.3, which="both")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
fig.savefig(os.path.join(here, "nccl.png"), dpi=110)
