r"""A chain of rigid links hanging from a fixed point: ``RigidBodies`` with spherical joints.

``link_chain(links, length, radius, mass, gravity)``: n solid cylinders (length ℓ,
radius r, mass m: 𝕁 = m diag((3r² + ℓ²)/12, (3r² + ℓ²)/12, r²/2), the axis along body
z), link 0's top end (0, 0, ℓ/2) held at the origin, each next link's top end held at
the one before's bottom end (0, 0, −ℓ/2), under gravity γ along −z:

    V(x, R) = γ m Σ_i z_i,   joints: (0, top, "ground", 0), (i, top, i − 1, bottom).

The gravity γ and the mass are the potential's parameters (``params``: differentiable,
and one compiled run serves every value).  The joints to the ground point at the origin
and gravity keep the angular momentum about the vertical, which is not declared (the
bodies' L is declared only for V invariant under every rotation).

``link_chain_state(system, angles, azimuths, spins)`` places link i at ``angles[i]``
from the downward vertical, turned by ``azimuths[i]`` about it, spinning at the space
angular velocity ``spins[i]``: its positions follow from the joints, its velocities
from the spins (v_i = v_{i−1} + ω_{i−1} × R_{i−1}b − ω_i × R_i t, t and b the top and
bottom ends), so the state is on the joints' manifold to round-off.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mechint._validate import real_array
from mechint.errors import InputError
from mechint.systems.joints import Joint
from mechint.systems.rigid_bodies import RigidBodies

# the joints' Jacobian is a dense (3n × 6n) matrix
MOST_LINKS = 200


def link_gravity(x, R, params):
    """V = γ m Σ z_i (the potential of ``link_chain``)."""
    return params["gravity"] * jnp.sum(params["mass"] * x[:, 2])


def _number(name: str, value, positive: bool = True) -> float:
    arr = real_array(name, value)
    v = float(arr.reshape(-1)[0]) if arr.size == 1 else float("nan")
    if not (np.isfinite(v) and (v > 0 if positive else v >= 0)):
        bound = "> 0" if positive else ">= 0"
        raise InputError(name, f"must be one finite number {bound}, got {value!r}")
    return v


def link_chain(links: int = 10, length=0.1, radius=0.005, mass=0.1, gravity=9.81) -> RigidBodies:
    """The chain of the module docstring (``links`` cylinders)."""
    if not isinstance(links, int | np.integer) or isinstance(links, bool) or links < 1:
        raise InputError("links", f"must be an integer >= 1, got {links!r}")
    if links > MOST_LINKS:
        raise InputError("links", f"at most {MOST_LINKS}, got {links}")
    ell, r = _number("length", length), _number("radius", radius)
    m, g = _number("mass", mass), _number("gravity", gravity, positive=False)
    side = m * (3 * r * r + ell * ell) / 12.0
    inertia = [(side, side, m * r * r / 2.0)] * links
    top, bottom = (0.0, 0.0, ell / 2), (0.0, 0.0, -ell / 2)
    joints = [Joint(0, top, "ground", (0.0, 0.0, 0.0))]
    joints += [Joint(i, top, i - 1, bottom) for i in range(1, links)]
    params = {"gravity": np.float64(g), "mass": np.full(links, m)}
    return RigidBodies(inertia, [m] * links, link_gravity, params, joints=joints)


def link_chain_state(system: RigidBodies, angles, azimuths=None, spins=None):
    """(x, p, R, Π) of a ``link_chain`` (the module docstring): ``angles``, ``azimuths``
    (n,) in radians, ``spins`` (n, 3) space angular velocities (default 0)."""
    n = system.bodies
    joints = system.joints
    if len(joints) != n or not joints[0].grounded:
        raise InputError("system", "must be a link_chain")
    ell = 2.0 * joints[0].site_a[2]

    def given(name, value, shape):
        if value is None:
            return np.zeros(shape)
        arr = real_array(name, value)
        if arr.shape != shape:
            raise InputError(name, f"expected shape {shape}, got {arr.shape}")
        return arr

    th, ph = given("angles", angles, (n,)), given("azimuths", azimuths, (n,))
    w = given("spins", spins, (n, 3))
    c, s, cp, sp = np.cos(th), np.sin(th), np.cos(ph), np.sin(ph)
    zero, one = np.zeros(n), np.ones(n)
    Ry = np.stack([np.stack([c, zero, s], -1), np.stack([zero, one, zero], -1),
                   np.stack([-s, zero, c], -1)], -2)  # fmt: skip
    Rz = np.stack([np.stack([cp, -sp, zero], -1), np.stack([sp, cp, zero], -1),
                   np.stack([zero, zero, one], -1)], -2)  # fmt: skip
    # the link's axis from its bottom to its top points up, tilted by the angle: hanging
    R = Rz @ Ry
    top, bottom = R @ np.array([0.0, 0.0, ell / 2]), R @ np.array([0.0, 0.0, -ell / 2])
    x, v = np.zeros((n, 3)), np.zeros((n, 3))
    joint, joint_v = np.zeros(3), np.zeros(3)
    for i in range(n):
        x[i] = joint - top[i]
        v[i] = joint_v - np.cross(w[i], top[i])
        joint, joint_v = x[i] + bottom[i], v[i] + np.cross(w[i], bottom[i])
    mass = np.asarray(system.mass)
    Omega = np.einsum("nji,nj->ni", R, w)  # body frame
    Pi = np.asarray(system.inertia) * Omega  # principal frames (link_chain's)
    return x, mass[:, None] * v, R, Pi


def _preset(links: int):
    def make():
        system = link_chain(links)
        k = np.arange(n := links)
        spins = np.stack([0.5 * np.cos(k), 1.0 * np.sin(k), 0.2 * np.ones(n)], -1)
        return system, link_chain_state(system, np.full(n, 0.6), np.linspace(0.0, 1.0, n),
                                        spins)  # fmt: skip

    return make


# ten links of 0.1 m and 0.1 kg (radius 5 mm), tilted 0.6 and spun: the benchmarks' chain
RigidBodies.presets = {"link-chain-10": _preset(10)}
