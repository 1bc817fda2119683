"""Two planets from their transit times and radial velocities: gradients through the run, NUTS.

Synthetic data made by the library at known parameters: a star of one solar mass and
two planets of about ten Earth masses near the 2:1 resonance (periods 10 and 20.3 days,
their transit times pulled off a fixed period by each other: transit-timing
variations), observed edge-on for 400 days; every transit timed with noise σ_t = 2e-4
days (17 s), the star's radial velocity at 40 random times with σ_v = 0.5 m/s.

The model's six parameters are the masses, the periods and the mean anomalies at t = 0
(the eccentricities and angles known).  Its predictions are one ``mi.integrate`` of the
Wisdom–Holman map (h = 0.25 day) from ``nbody.elements_state`` (the state as a JAX
function of the elements), with the two ``nbody.transits`` events and the RV times as
``save_at``, so that ``jax.grad`` of the Gaussian log-likelihood goes through the whole
run (the transit times by the implicit function theorem).

1. The maximum of the likelihood by Gauss–Newton steps from a start off the truth, with
   the Jacobian of the residuals from ``jax.jacfwd``; the errors from the inverse Fisher
   matrix there.
2. (Without ``--quick``) the cost of the log-likelihood's value and of its value with
   the gradient (reverse mode, ``jax.value_and_grad``), and, with NumPyro installed
   (``pip install 'mechint[examples]'``), NUTS on the same likelihood (flat priors, its
   gradient in forward mode: six tangents through one run), whose posterior means and
   widths are printed beside the truth.

python examples/transit_inference.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import mechint as mi
from mechint.systems import nbody

G = nbody.GAUSS_G
H, T = 0.25, 400.0
STEPS = round(T / H)
SIGMA_T, SIGMA_V = 2e-4, 0.5  # days, m/s
MASS_UNIT = 1e-5  # solar masses (about 3.3 Earth masses)
NAMES = ("m1", "m2", "P1", "P2", "M1", "M2")
TRUTH = np.array([3.0, 2.5, 10.0, 20.3, 0.3, 2.0])  # masses in MASS_UNIT, days, radians
FIXED = {"e": [0.02, 0.03], "i": [np.pi / 2, np.pi / 2 - 0.01], "Omega": [0.0, 0.01],
         "omega": [0.3, 1.0]}  # fmt: skip
WH = mi.integrators.WisdomHolman()


def predict(theta, rv_times, counts):
    """(planet 1's transit times, planet 2's, the star's radial velocity in m/s)."""
    masses = jnp.concatenate([jnp.ones(1), theta[:2] * MASS_UNIT])
    elements = {**FIXED, "P": theta[2:4], "M": theta[4:6]}
    x0 = nbody.elements_state(masses, elements, G)
    system = nbody.NBody(masses, G)
    events = [nbody.transits(system, 1), nbody.transits(system, 2)]
    sol = mi.integrate(system, WH, x0, H, STEPS, events=events, max_events=64,
                       save_at=rv_times)  # fmt: skip
    t1 = sol.events["transit_1"].t[: counts[0]]
    t2 = sol.events["transit_2"].t[: counts[1]]
    rv = nbody.radial_velocity(system, sol.x) * nbody.AU_PER_DAY_IN_M_PER_S
    return t1, t2, rv


def data(seed: int = 0):
    """The synthetic observations at the true parameters, with noise."""
    rng = np.random.default_rng(seed)
    rv_times = np.sort(rng.uniform(1.0, T - 1.0, 40))
    t1, t2, rv = (np.asarray(a) for a in predict(jnp.asarray(TRUTH), rv_times, (64, 64)))
    t1, t2 = t1[np.isfinite(t1)], t2[np.isfinite(t2)]
    return {
        "rv_times": rv_times,
        "counts": (len(t1), len(t2)),
        "t1": t1 + SIGMA_T * rng.standard_normal(len(t1)),
        "t2": t2 + SIGMA_T * rng.standard_normal(len(t2)),
        "rv": rv + SIGMA_V * rng.standard_normal(len(rv)),
    }


def residuals_fn(obs):
    """The normalised residuals r(θ) (the log-likelihood is −|r|²/2)."""

    def residuals(theta):
        t1, t2, rv = predict(theta, obs["rv_times"], obs["counts"])
        return jnp.concatenate([(t1 - obs["t1"]) / SIGMA_T, (t2 - obs["t2"]) / SIGMA_T,
                                (rv - obs["rv"]) / SIGMA_V])  # fmt: skip

    return residuals


def _with_value(f):
    """θ ↦ (f(θ), f(θ)) from one evaluation: ``jax.jacfwd(..., has_aux=True)`` then gives
    the Jacobian and the value from one forward pass."""

    def both(theta):
        value = f(theta)
        return value, value

    return both


def fit(obs, start, iterations: int = 8):
    """Gauss–Newton from ``start``: (θ, its covariance (JᵀJ)⁻¹, χ², the number of data)."""
    residuals = residuals_fn(obs)
    # the residuals and their Jacobian from one forward-mode program
    both = jax.jit(jax.jacfwd(_with_value(residuals), has_aux=True))
    theta = jnp.asarray(start)
    for _ in range(iterations):
        J, r = both(theta)
        theta = theta - jnp.linalg.solve(J.T @ J, J.T @ r)
    J, r = both(theta)
    return np.asarray(theta), np.linalg.inv(np.asarray(J.T @ J)), float(r @ r), r.size


def forward_gradient(f):
    """``f`` (R⁶ → R) whose reverse-mode derivative is computed in forward mode: with six
    parameters, one forward pass carrying six tangents costs less than the reverse pass
    through the run's events (which JAX differentiates step by step)."""

    @jax.custom_vjp
    def g(theta):
        return f(theta)

    def fwd(theta):
        grad, value = jax.jacfwd(_with_value(f), has_aux=True)(theta)
        return value, grad

    def bwd(grad, cotangent):
        return (cotangent * grad,)

    g.defvjp(fwd, bwd)
    return g


def sample(obs, center, cov, warmup: int, samples: int, seed: int = 1):
    """NUTS (NumPyro) on the log-likelihood, flat priors: the draws of θ.  The sampler
    moves z with θ = center + L z (L Lᵀ = cov, the fit's covariance), in which the
    posterior is near a unit normal: short trajectories, a diagonal mass matrix."""
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    residuals = residuals_fn(obs)
    L = jnp.asarray(np.linalg.cholesky(cov))
    center = jnp.asarray(center)

    @forward_gradient
    def loglike(z):
        r = residuals(center + L @ z)
        return -0.5 * jnp.sum(r * r)

    def model():
        z = numpyro.sample("z", dist.ImproperUniform(dist.constraints.real, (), (6,)))
        numpyro.factor("loglike", loglike(z))

    mcmc = MCMC(NUTS(model, max_tree_depth=4), num_warmup=warmup, num_samples=samples,
                progress_bar=False)  # fmt: skip
    mcmc.run(jax.random.PRNGKey(seed), init_params={"z": jnp.zeros(6)})
    z = np.asarray(mcmc.get_samples()["z"])
    return np.asarray(center) + z @ np.asarray(L).T


def main(quick: bool = False) -> dict:
    obs = data()
    n1, n2 = obs["counts"]
    print(f"data: {n1} + {n2} transit times (σ = {SIGMA_T * 86400:.0f} s), "
          f"{len(obs['rv'])} radial velocities (σ = {SIGMA_V} m/s) over {T:g} days")  # fmt: skip
    start = TRUTH * np.array([1.3, 0.7, 1.0, 1.0, 1.0, 1.0]) + np.array([0, 0, 2e-4, -3e-4,
                                                                        0.01, -0.01])  # fmt: skip
    clock = time.perf_counter()
    theta, cov, chi2, n = fit(obs, start)
    err = np.sqrt(np.diag(cov))
    z = (theta - TRUTH) / err
    print(f"Gauss-Newton fit ({time.perf_counter() - clock:.1f} s, compile included): "
          f"χ² = {chi2:.1f} for {n} data, {n - len(theta)} degrees of freedom")  # fmt: skip
    for name, a, b, s, zz in zip(NAMES, theta, TRUTH, err, z, strict=True):
        print(f"  {name}: {a:.6g} ± {s:.2g} (truth {b:g}, {zz:+.2f} σ)")
    result = {"theta": theta, "error": err, "z": z, "chi2/dof": chi2 / (n - len(theta))}
    if quick:
        return result
    # the gradient's cost: value and gradient of the log-likelihood against the value
    residuals = residuals_fn(obs)

    def loglike(th):
        r = residuals(th)
        return -0.5 * jnp.sum(r * r)

    value, both = jax.jit(loglike), jax.jit(jax.value_and_grad(loglike))
    ahead = jax.jit(jax.value_and_grad(forward_gradient(loglike)))

    def median_time(f, calls: int = 7) -> float:
        """The median wall time of ``calls`` calls of the compiled f (a call of the reverse
        mode's larger program varies by up to 2x from call to call on a CPU)."""
        jax.block_until_ready(f(theta))
        times = []
        for _ in range(calls):
            clock = time.perf_counter()
            jax.block_until_ready(f(theta))
            times.append(time.perf_counter() - clock)
        return float(np.median(times))

    t_value, t_both, t_ahead = (median_time(f) for f in (value, both, ahead))
    result["grad/value time"] = t_both / t_value
    result["forward grad/value time"] = t_ahead / t_value
    print(f"log-likelihood {t_value * 1e3:.1f} ms; with its gradient: reverse mode "
          f"{t_both * 1e3:.1f} ms ({t_both / t_value:.1f}x), forward mode {t_ahead * 1e3:.1f} "
          f"ms ({t_ahead / t_value:.1f}x); central differences would take "
          f"{2 * len(theta)}x")  # fmt: skip
    try:
        import numpyro  # noqa: F401
    except ImportError:
        print("NumPyro is not installed (pip install 'mechint[examples]'): no sampling")
        return result
    clock = time.perf_counter()
    draws = sample(obs, theta, cov, warmup=100, samples=200)
    mean, width = draws.mean(0), draws.std(0)
    print(f"NUTS, 100 warm-up + 200 draws ({time.perf_counter() - clock:.0f} s):")
    for name, a, s, b in zip(NAMES, mean, width, TRUTH, strict=True):
        print(f"  {name}: {a:.6g} ± {s:.2g} (truth {b:g}, {(a - b) / s:+.2f} σ)")
    result.update({"posterior mean": mean, "posterior width": width})
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
