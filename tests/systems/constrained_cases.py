"""Constrained test systems and their angle formulations, integrated by SciPy's DOP853
(independent of mechint: the references of the constrained maps' tests)."""

import numpy as np
from scipy.integrate import solve_ivp

from mechint.systems.constrained_models import PendulumChain, hanging_state

# the double pendulum of the tests: masses 1 and 2 on rods of 1 and 0.5, gravity 9.81
DOUBLE = {"masses": (1.0, 2.0), "lengths": (1.0, 0.5), "gravity": 9.81}
DOUBLE_START = {"angles": (1.0, -0.5), "rates": (0.3, 1.2)}


def double_pendulum():
    """(system, x0) of the planar double pendulum in Cartesian coordinates."""
    system = PendulumChain(DOUBLE["masses"], DOUBLE["lengths"], DOUBLE["gravity"], dim=2)
    return system, hanging_state(system, **DOUBLE_START)


def double_pendulum_reference(T: float):
    """The double pendulum's state at T from its angle equations (Lagrange's, angles from
    the downward vertical), DOP853 at rtol = atol = 1e-13, placed in Cartesian
    coordinates."""
    (m1, m2), (l1, l2), g = DOUBLE["masses"], DOUBLE["lengths"], DOUBLE["gravity"]

    def rhs(t, y):
        t1, t2, w1, w2 = y
        c, s = np.cos(t1 - t2), np.sin(t1 - t2)
        M = np.array([[(m1 + m2) * l1**2, m2 * l1 * l2 * c], [m2 * l1 * l2 * c, m2 * l2**2]])
        f = np.array([-m2 * l1 * l2 * w2**2 * s - (m1 + m2) * g * l1 * np.sin(t1),
                      m2 * l1 * l2 * w1**2 * s - m2 * g * l2 * np.sin(t2)])  # fmt: skip
        return [w1, w2, *np.linalg.solve(M, f)]

    y0 = [*DOUBLE_START["angles"], *DOUBLE_START["rates"]]
    sol = solve_ivp(rhs, (0.0, T), y0, method="DOP853", rtol=1e-13, atol=1e-13)
    system, _ = double_pendulum()
    return hanging_state(system, sol.y[:2, -1], sol.y[2:, -1])


# the spherical pendulum: rod 1, gravity 1, started off the vertical with a spin about it
SPHERICAL_START = {"angles": (1.0,), "rates": (0.2,), "azimuths": (0.3,), "azimuth_rates": (0.9,)}


def spherical_pendulum():
    system = PendulumChain([1.0], [1.0], gravity=1.0, dim=3)
    return system, hanging_state(system, **SPHERICAL_START)


def spherical_pendulum_reference(T: float):
    """The spherical pendulum at T from its angle equations θ'' = sinθ cosθ φ'² − sinθ,
    φ'' = −2 cotθ θ'φ' (θ from the downward vertical; the spin keeps θ off 0)."""

    def rhs(t, y):
        th, _, dth, dph = y
        return [dth, dph, np.sin(th) * np.cos(th) * dph**2 - np.sin(th),
                -2.0 * np.cos(th) / np.sin(th) * dth * dph]  # fmt: skip

    s = SPHERICAL_START
    y0 = [s["angles"][0], s["azimuths"][0], s["rates"][0], s["azimuth_rates"][0]]
    sol = solve_ivp(rhs, (0.0, T), y0, method="DOP853", rtol=1e-13, atol=1e-13)
    system, _ = spherical_pendulum()
    th, ph, dth, dph = sol.y[:, -1]
    return hanging_state(system, [th], [dth], [ph], [dph])


def unit_sphere(q):
    """g(q) = |q|² − 1: the constraint ``mechint run --constraints`` imports in the CLI
    tests."""
    import jax.numpy as jnp

    return jnp.sum(q**2) - 1.0


def body_gravity(x, R):
    """V = 9.81 Σ z_b, bodies of mass 1 under gravity: the potential the command line's
    jointed rigid-bodies test imports."""
    import jax.numpy as jnp

    return 9.81 * jnp.sum(x[:, 2])
