"""plot_correlators.py JSON PNG: C(t) and m_eff(t) of `wdirac propagator`.

Reads the JSON record `wdirac propagator --json` writes (or the temporary
one it writes for --png alone) and draws two panels: |C(t)| on a log scale
(open markers where C(t) < 0) and the effective masses per time slice.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out = sys.argv[1], sys.argv[2]
    with open(src) as f:
        rec = json.load(f)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for name, m in rec["mesons"].items():
        c = m["C"]
        t = range(len(c))
        line, = a.semilogy(t, [abs(v) if v != 0 else float("nan") for v in c], "o-", ms=3,
                           label=name)
        neg = [(i, -v) for i, v in enumerate(c) if v < 0]
        if neg:
            a.plot([i for i, _ in neg], [v for _, v in neg], "o", mfc="white",
                   color=line.get_color(), ms=5)
        e = [float("nan") if v is None else v for v in m["m_eff"]]
        b.plot(range(len(e)), e, "o", ms=4, color=line.get_color(), label=name)
    d = rec["dims"]
    a.set_title(f"C(t), {d[0]}x{d[1]}x{d[2]}x{d[3]}, kappa {rec['kappa']:.5g}, "
                f"{rec['source']} source")
    a.set_xlabel("t (from the source slice)")
    a.set_ylabel("|C(t)| (open: C < 0)")
    a.legend(fontsize=8)
    b.set_title("effective mass (cosh; sinh for a4-pseudoscalar)")
    b.set_xlabel("t")
    b.set_ylabel("m_eff(t)")
    b.set_ylim(bottom=0)
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main()
