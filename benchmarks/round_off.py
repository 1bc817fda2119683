"""Round-off against truncation on Kepler: the best error reachable, plain and compensated.

    python benchmarks/round_off.py [--quick] [--attribution]

Kepler e = 0.5 over 100 orbits (T = 200π), from the periapsis state turned to 48 angles:
the same orbit for the exact solution, other roundings for the map, so that the error's
round-off part, a random walk, is seen as a distribution and not as one draw.

1. The final error max |z(T) − z_exact(T)| (median and worst over the orbits) of the
   Kahan-Li-8 and Sofroniou-Spaletta-10 compositions of Störmer-Verlet at several step
   counts, with the steps' increments added plainly (``compensated=False``) and by
   compensated summation (the default for these maps); the exact solution from Kepler's
   equation in mpmath (40 digits), at the run's own time steps·h.
2. What the compensation costs: one trajectory of 10^5 steps, Störmer-Verlet and its
   compositions of orders 4 to 10 (compensated by default from order 8), plain and
   compensated; best of 3 after compiling.
3. ``--attribution`` (slow, about 10 minutes): the same Sofroniou-Spaletta-10 run written
   in NumPy, float64 with compensated summation as mechint did it before it compensated
   every kick and drift (the stages' increments summed, the sum added once), then with parts of
   its arithmetic in 80-bit extended precision: the stage points (S), the sum of the
   stages' increments and the compensation (D), the kicks and drifts (K), the force (F),
   all four; the force's value kept in 80-bit (V; F alone evaluates it in 80-bit and
   rounds the value to float64); and with the stage points x + e + d, the carried
   compensation e included (E: in float64 x + e rounds back to x, so E matters with S);
   and C, float64 with the stages' increments summed with a running error (TwoSum), a
   probe of what ``stages.advance_increment`` could do (the row "" is what it does).
   Which rounding set that algorithm's floor (docs/performance.md).
Targets (issue 37): the best error reachable ≤ 1e-12 with an order-8 or -10 composition.
"""

from __future__ import annotations

import argparse

import jax
import mpmath as mp
import numpy as np
from _timing import best_of

import mechint as mi

I = mi.integrators
KEPLER = mi.systems.Kepler()
E, TURNS = 0.5, 100
T = 2 * np.pi * TURNS
DIGITS = 40


def orbits(n: int, first: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """The periapsis state of e = 0.5 turned to n angles, from ``first`` on: (q, p), each
    (n, 2)."""
    q, p = KEPLER.periapsis_state(E)
    th = first + 2 * np.pi * np.arange(n) / n
    c, s = np.cos(th)[:, None], np.sin(th)[:, None]
    turn = lambda v: np.concatenate([c * v[0] - s * v[1], s * v[0] + c * v[1]], axis=1)  # noqa: E731
    return turn(q), turn(p)


def exact(q0, p0, t) -> np.ndarray:
    """(q, p) at time t (an mpmath number) of the Kepler orbit through (q0, p0), μ = 1,
    solved in mpmath from Kepler's equation; float64, (4,)."""
    with mp.workdps(DIGITS):
        q0, p0 = [mp.mpf(float(v)) for v in q0], [mp.mpf(float(v)) for v in p0]
        r0 = mp.sqrt(q0[0] ** 2 + q0[1] ** 2)
        energy = (p0[0] ** 2 + p0[1] ** 2) / 2 - 1 / r0
        L = q0[0] * p0[1] - q0[1] * p0[0]
        a = -1 / (2 * energy)
        n = mp.sqrt(1 / a**3)
        A = [p0[1] * L - q0[0] / r0, -p0[0] * L - q0[1] / r0]
        e, w = mp.sqrt(A[0] ** 2 + A[1] ** 2), mp.atan2(A[1], A[0])
        cw, sw = mp.cos(w), mp.sin(w)
        x0, y0 = cw * q0[0] + sw * q0[1], -sw * q0[0] + cw * q0[1]
        b = a * mp.sqrt(1 - e * e)
        E0 = mp.atan2(y0 / b, x0 / a + e)
        M = E0 - e * mp.sin(E0) + n * t
        Ea = mp.findroot(lambda u: u - e * mp.sin(u) - M, M)
        den = 1 - e * mp.cos(Ea)
        x, y = a * (mp.cos(Ea) - e), b * mp.sin(Ea)
        vx, vy = -a * n * mp.sin(Ea) / den, b * n * mp.cos(Ea) / den
        z = [cw * x - sw * y, sw * x + cw * y, cw * vx - sw * vy, sw * vx + cw * vy]
        return np.array([float(v) for v in z])


def final_errors(q0, p0, steps: int, z: np.ndarray) -> np.ndarray:
    """max |z − z_exact| per orbit at time steps·h, h = T/steps as the run took it (the
    product in 40 digits: at mpmath's default 53 bits it is off by up to 3e-14, which
    moved the reference by 1e-13 at 256 000 steps)."""
    with mp.workdps(DIGITS):
        t = mp.mpf(float(T / steps)) * steps
    want = np.stack([exact(q, p, t) for q, p in zip(q0, p0, strict=True)])
    return np.abs(z - want).max(axis=1)


def reachable(quick: bool) -> None:
    n = 4 if quick else 48
    q0, p0 = orbits(n)
    cases = {
        "kahan-li8": [2000, 4000] if quick else [24000, 32000, 48000, 64000, 128000, 256000],
        "sofroniou-spaletta10": [] if quick else [12000, 20000, 32000, 64000, 128000, 256000],
    }
    print(f"Kepler e = {E}, T = 200π, {n} orbits turned: final error, median / worst")
    print("| composition | steps | plain | compensated (the default) |")
    print("|---|---|---|---|")
    best: dict[str, float] = {}
    for scheme, counts in cases.items():
        integ = I.Composition(I.StormerVerlet(), scheme)
        for steps in counts:
            row = []
            for comp in (False, True):
                traj = mi.simulate(KEPLER, integ, (q0, p0), T / steps, steps, steps,
                                   compensated=comp)  # fmt: skip
                z = np.concatenate([np.asarray(a)[:, -1] for a in traj.x], axis=1)
                err = final_errors(q0, p0, steps, z)
                row.append(f"{np.median(err):.1e} / {err.max():.1e}")
                key = "compensated" if comp else "plain"
                best[key] = min(best.get(key, np.inf), float(np.median(err)))
            print(f"| {scheme} | {steps} | {row[0]} | {row[1]} |", flush=True)
    print(f"best median: plain {best['plain']:.1e}, compensated {best['compensated']:.1e}")


def cost(quick: bool, repeat: int) -> None:
    steps = 10**4 if quick else 10**5
    x0 = KEPLER.periapsis_state(E)
    maps = {"sofroniou-spaletta10": I.Composition(I.StormerVerlet(), "sofroniou-spaletta10")}
    if not quick:
        schemes = ("yoshida4", "yoshida6", "kahan-li6", "suzuki-umeno8", "kahan-li8")
        maps = {"stormer-verlet": I.StormerVerlet(),
                **{s: I.Composition(I.StormerVerlet(), s) for s in schemes}, **maps}  # fmt: skip
    print(f"\nWhat the compensation costs: one trajectory, {steps:.0e} steps, steps/s "
          f"(device: {jax.devices()[0]})")  # fmt: skip
    print("| map | plain | compensated | ratio | compensated by default |")
    print("|---|---|---|---|---|")
    for label, integ in maps.items():
        rates = []
        for comp in (False, True):
            run = lambda c=comp, m=integ: mi.simulate(KEPLER, m, x0, 0.01, steps, steps,  # noqa: E731
                                                      compensated=c)  # fmt: skip
            rates.append(steps / best_of(run, repeat, warm=True).best)
        auto = "yes" if integ.compensated_by_default(KEPLER) else "no"
        print(f"| {label} | {rates[0]:.3g} | {rates[1]:.3g} | {rates[1] / rates[0]:.2f} | {auto} |")


def attribution(steps: int = 20000, n: int = 48) -> None:
    """Section 3 of the module docstring (NumPy, one Python loop over the stages)."""
    from mechint.integrators import composition_schemes

    gamma = composition_schemes.get("sofroniou-spaletta10").gamma
    q0, p0 = orbits(n)
    h = T / steps
    print(f"\nWhich rounding sets the floor: Sofroniou-Spaletta-10, {steps} steps, {n} orbits")
    print("| in 80-bit | median | worst |")
    print("|---|---|---|")
    for flags in ("", "C", "S", "D", "K", "F", "SDKF", "SE", "SDKFE", "SDKFV", "SDKFVE"):
        z = _numpy_run(flags, gamma, q0, p0, h, steps)
        err = final_errors(q0, p0, steps, z)
        print(f"| {flags or 'none (float64)'} | {np.median(err):.1e} | {err.max():.1e} |",
              flush=True)  # fmt: skip


def _numpy_run(flags: str, gamma, q0, p0, h: float, steps: int) -> np.ndarray:
    """mechint's earlier compensated composition of Störmer-Verlet (the stages'
    increments summed, the sum added once), its parts in np.longdouble
    as ``flags`` says (see ``attribution``); the force as jax.grad forms it."""
    wide, f64 = np.longdouble, np.float64
    st, dt, kt = (wide if c in flags else f64 for c in "SDK")

    def force(q, t):
        q = q.astype(t)
        r = np.sqrt((q * q).sum(axis=1, keepdims=True))
        return ((t(1) / (r * r)) * (t(0.5) / r) * t(2) * q).astype(vt)

    ft = wide if "F" in flags else f64
    vt = wide if "V" in flags else f64
    x = [q0.copy(), p0.copy()]
    e = [np.zeros_like(q0), np.zeros_like(p0)]
    for _ in range(steps):
        dq, dp = np.zeros(q0.shape, dt), np.zeros(p0.shape, dt)
        err = [np.zeros(q0.shape, dt), np.zeros(p0.shape, dt)]
        for g in gamma:
            c = f64(g) * f64(h)
            y, yp = (x[i].astype(st) + (e[i].astype(st) if "E" in flags else st(0)) + d.astype(st)
                     for i, d in ((0, dq), (1, dp)))  # fmt: skip
            k1 = -(kt(0.5) * kt(c)) * force(y, ft).astype(kt)
            ddq = kt(c) * (yp + k1.astype(st)).astype(kt)
            k2 = -(kt(0.5) * kt(c)) * force(y + ddq.astype(st), ft).astype(kt)
            new_q, new_p = dq + ddq.astype(dt), dp + (k1 + k2).astype(dt)
            if "C" in flags:  # the rounding of each partial sum kept (TwoSum)
                for i, (a, b, s) in enumerate(
                    ((dq, ddq.astype(dt), new_q), (dp, (k1 + k2).astype(dt), new_p))
                ):
                    bb = s - a
                    err[i] = err[i] + ((a - (s - bb)) + (b - bb))
            dq, dp = new_q, new_p
        for i, d in enumerate((dq + err[0], dp + err[1]) if "C" in flags else (dq, dp)):
            a = d.astype(dt) + e[i].astype(dt)
            new = (x[i].astype(dt) + a).astype(f64)
            e[i] = ((x[i].astype(dt) - new) + a).astype(f64)
            x[i] = new
    return np.concatenate(x, axis=1)


def main(quick: bool = False, attribute: bool = False) -> None:
    reachable(quick)
    cost(quick, repeat=1 if quick else 3)
    if attribute:
        attribution()
    print("\ntargets: best error reachable on Kepler e = 0.5, T = 200π ≤ 1e-12 (issue 37)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--attribution", action="store_true")
    args = ap.parse_args()
    main(args.quick, args.attribution)
