"""What plot_dslash.py and paper_report.py share: precision names, the rows of
the paper's 24^3 x T sweep in a `wdirac bench dslash --json` result, and its
Gflops-vs-T figure (the paper's Figures 2-5).

    pyplot()        matplotlib.pyplot on the Agg backend, or None without matplotlib
    sweep_rows()    the plain (dag0, xpay0) rows at spatial 24^3
    plot_sweep()    one precision's Gflops vs T, written to a PNG
"""

# precision = bytes per real in the benchmark JSON (DESIGN.md, Variants)
PREC_TOKEN = {8: "d", 4: "s", 2: "h"}
PREC_NAME = {8: "double", 4: "single", 2: "half"}


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def sweep_rows(results):
    return [r for r in results
            if r["dims"][:3] == [24, 24, 24] and not r["dagger"] and not r["xpay"]]


def plot_sweep(plt, rows, precision, title, path):
    """Gflops vs T of one precision: recon 18/12/8 by colour, gauge fixing by
    marker, unpadded solid and padded dashed.  Writes nothing and returns
    False when the rows hold fewer than three values of T."""
    rows = [r for r in rows if r["precision"] == precision]
    if len({r["dims"][3] for r in rows}) < 3:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for recon, colour in ((18, "tab:gray"), (12, "tab:blue"), (8, "tab:red")):
        for gf, marker in ((0, "o"), (1, "s")):
            for padded, style in ((False, "-"), (True, "--")):
                pts = sorted((r["dims"][3], r["gflops"]) for r in rows
                             if r["recon"] == recon and r["gauge_fix"] == gf
                             and (r["pad"] != 0) == padded)
                if not pts:
                    continue
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colour,
                        marker=marker, markersize=3,
                        label=f"{recon} recon{', GF' if gf else ''}{', padded' if padded else ''}")
    ax.set_xlabel("temporal extent T (24^3 x T)")
    ax.set_ylabel("Gflops (1320 flops per site)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
