"""Integrability of Kahan's map: its integrals found from its orbits.

python examples/kahan_integrability.py [--quick] [--out kahan_integrability.png]

Along one orbit of a map, the relations Σ c_j φ_j(x_k) = 0 among given functions φ_j
(here monomials of the coordinates, the constant included) are the null space of the
matrix [φ_j(x_k)] (the "HK basis" method of Hirota–Kimura and Petrera–Pfadler–Suris):
``mi.diagnostics.find_integrals`` takes it by the SVD of the column-scaled matrix and
checks every relation on the orbit's continuation and anew from a later stretch.  The
table sets Kahan's map (h = 0.1) beside the continuous flow (the exact solution or
DOP853) on integrable tops, and on a heavy top off its integrable cases: the control,
where the flow keeps only H and the two Casimirs and Kahan's map keeps none of them.
"Gap" is the ratio of the smallest singular value outside the null space to the largest
inside (at least 10⁶ for a clear decision; "—" where there is no null space).  The
figure shows the singular values, relative to the largest, of the first orbit.
"""

from __future__ import annotations

import argparse

import jax.numpy as jnp
import numpy as np

import mechint as mi

H = 0.1


def _squares_and_linear(n: int) -> dict:
    out = {f"m{i + 1}^2": (lambda m, i=i: m[i] ** 2) for i in range(n)}
    out.update({f"m{i + 1}": (lambda m, i=i: m[i]) for i in range(n)})
    out["1"] = lambda m: jnp.ones_like(m[0])
    return out


def cases(quick: bool) -> list[tuple[str, object, object, str, dict]]:
    """(label, system, state, basis label, basis) for each row."""
    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    heavy = mi.systems.HeavyTop((1.0, 1.5, 0.5), (0.3, 0.2, 1.0))
    m, gamma = np.array([0.3, 0.2, 0.8]), np.array([0.1, 0.5, 0.86])
    rows = [
        ("Euler top", top, np.array([0.45, 0.1, 0.89]), "m_i², 1",
         {k: v for k, v in _squares_and_linear(3).items() if "^" in k or k == "1"}),
        ("heavy top (control)", heavy, (m, gamma), "monomials ≤ 2",
         mi.diagnostics.monomials(heavy, 2)),
    ]  # fmt: skip
    if quick:
        return rows
    zv1 = mi.systems.ZhukovskyVolterra((2.0, 1.0, 0.6667), (0.0, 0.0, 0.3))
    zv3 = mi.systems.ZhukovskyVolterra((2.0, 1.0, 0.6667), (0.1, 0.2, 0.3))
    lagrange = mi.systems.LagrangeTop((1.0, 1.0, 0.5), (0.0, 0.0, 1.0))
    clebsch = mi.systems.ClebschTop((1.0, 2.0, 3.0))
    hh = mi.systems.HenonHeiles()
    return [
        rows[0],
        ("Zhukovsky–Volterra, β = (0, 0, 0.3)", zv1, np.array([0.45, 0.1, 0.89]),
         "m_i², m_i, 1", _squares_and_linear(3)),
        ("Zhukovsky–Volterra, β = (0.1, 0.2, 0.3)", zv3, np.array([0.45, 0.1, 0.89]),
         "m_i², m_i, 1", _squares_and_linear(3)),
        ("Lagrange top", lagrange, (m, gamma), "monomials ≤ 2",
         mi.diagnostics.monomials(lagrange, 2)),
        ("Clebsch top, e(3)", clebsch, clebsch.example_state(), "monomials ≤ 2",
         mi.diagnostics.monomials(clebsch, 2)),
        ("Hénon–Heiles", hh, (np.array([0.1, -0.2]), np.array([0.3, 0.25])), "monomials ≤ 3",
         mi.diagnostics.monomials(hh, 3)),
        rows[1],
    ]  # fmt: skip


def main(quick: bool = False, out: str | None = None) -> list[dict]:
    rows = []
    for label, system, x, basis_label, basis in cases(quick):
        found = {
            who: mi.diagnostics.find_integrals(system, integrator, x, H, basis)
            for who, integrator in (("kahan", mi.integrators.Kahan()), ("flow", None))
        }
        rows.append({"system": label, "basis": basis_label, "size": len(basis), **found})
    print(f"Kahan's map (h = {H}) and the continuous flow: dimension of the null space "
          "(gap) per system and basis")  # fmt: skip
    print("| system | basis | functions | Kahan | flow |")
    print("|---|---|---|---|---|")
    for r in rows:
        cells = [r["system"], r["basis"], str(r["size"])]
        for who in ("kahan", "flow"):
            f = r[who]
            gap = "—" if f.dimension == 0 else f"{float(np.min(f.gap)):.1e}"
            cells.append(f"{f.dimension} ({gap})")
        print("| " + " | ".join(cells) + " |")
    first = rows[0]["kahan"]
    print(f"{rows[0]['system']}, Kahan's relations: " + "; ".join(first.expressions(0, 10)))
    if out:
        figure(rows).savefig(out, dpi=130)
        print(f"wrote {out}")
    return rows


def figure(rows):
    from matplotlib.figure import Figure

    cols = min(4, len(rows))
    lines = -(-len(rows) // cols)
    fig = Figure(figsize=(3.0 * cols, 2.6 * lines), layout="constrained")
    axes = np.atleast_1d(fig.subplots(lines, cols, sharey=True)).ravel()
    for ax, r in zip(axes, rows, strict=False):
        for who, style in (("kahan", "o-"), ("flow", "s--")):
            s = np.maximum(r[who].singular_values[0], 1e-18)
            name = "Kahan" if who == "kahan" else "flow"
            ax.semilogy(np.arange(1, s.size + 1), s, style, ms=3, lw=1,
                        label=f"{name}: {r[who].dimension}")  # fmt: skip
        ax.axhline(r["kahan"].rtol, color="0.6", lw=0.8, ls=":")
        ax.set_title(r["system"], fontsize=8)
        ax.legend(fontsize=7, loc="lower left")
        ax.set_xlabel("index", fontsize=8)
    for ax in axes[len(rows) :]:
        ax.set_visible(False)
    axes[0].set_ylabel("σ / σ_max")
    return fig


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two systems only")
    parser.add_argument("--out", help="write the figure (PNG) here")
    args = parser.parse_args()
    main(quick=args.quick, out=args.out)
