"""Attitude helpers: quaternions, Euler angles, axis–angle vectors and an orbit's local
frame, for the rotation matrices R (body → space) that mechint's states carry.

Conventions (each function takes and returns arrays with any leading axes, in JAX: jit,
vmap and grad work):

- A **quaternion** is (w, x, y, z), scalar first, of unit length, with w ≥ 0
  (``quaternion``); ``from_quaternion`` takes any non-zero q and normalises it.  It is
  the rotation by the angle θ about the unit axis n with (w, x, y, z) = (cos θ/2,
  n sin θ/2), and R(q) v = q v q*.
- **Euler angles** are intrinsic rotations of the body, in radians: "321" (yaw ψ about z,
  pitch θ about the new y, roll φ about the newest x: R = R_z(ψ) R_y(θ) R_x(φ), the
  aerospace sequence; returned as (ψ, θ, φ) with θ in [−π/2, π/2]) and "313" (R = R_z(φ)
  R_x(θ) R_z(ψ), returned as (φ, θ, ψ) with θ in [0, π]).  At gimbal lock (θ = ±π/2
  for "321", θ = 0 or π for "313") only a sum or difference of the outer angles is
  determined: the last angle is returned as 0.
- An **axis–angle vector** is θ n (|θ| ≤ π), R = exp(hat(θ n)).
- The **local-vertical / local-horizontal frame** (LVLH) of an orbit at position r and
  velocity v (in the space frame) has its z axis to the centre (nadir, −r/|r|), its y
  axis against the orbit's angular momentum (−r × v / |r × v|) and its x axis y × z
  (along v on a circular orbit); ``lvlh`` returns the matrix whose columns are these
  axes (LVLH → space).  ``roll_pitch_yaw(R, r, v)`` is the "321" Euler angles of the
  body in that frame, as (roll, pitch, yaw).

Checked against SciPy's ``scipy.spatial.transform.Rotation`` (``tests/test_attitude.py``).
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from mechint.errors import InputError
from mechint.lie import so3

__all__ = [
    "axis_angle",
    "circular_orbit",
    "euler_angles",
    "from_axis_angle",
    "from_euler",
    "from_quaternion",
    "lvlh",
    "quaternion",
    "roll_pitch_yaw",
]

_SEQUENCES = ("321", "313")


def _sequence(sequence: str) -> str:
    text = str(sequence).replace("-", "")
    if text not in _SEQUENCES:
        raise InputError("sequence", f"unknown Euler sequence {sequence!r}",
                         "'321' (yaw, pitch, roll) or '313'")  # fmt: skip
    return text


def quaternion(R: Float[ArrayLike, "... 3 3"]) -> Float[Array, "... 4"]:
    """The unit quaternion (w, x, y, z), w ≥ 0, of the rotation R (Shepperd's method,
    ``lie.so3.quaternion``, normalised)."""
    q = so3.quaternion(jnp.asarray(R))
    q = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
    return jnp.where(q[..., :1] < 0, -q, q)


def from_quaternion(q: Float[ArrayLike, "... 4"]) -> Float[Array, "... 3 3"]:
    """The rotation matrix of a quaternion (w, x, y, z) of any non-zero length."""
    qa = jnp.asarray(q)
    qa = qa / jnp.linalg.norm(qa, axis=-1, keepdims=True)
    w, x, y, z = qa[..., 0], qa[..., 1], qa[..., 2], qa[..., 3]
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _axis(angle, k: int):
    """The rotation by ``angle`` about axis k (0: x, 1: y, 2: z)."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    one, zero = jnp.ones_like(c), jnp.zeros_like(c)
    i, j = [(1, 2), (2, 0), (0, 1)][k]
    m: list[list[Array]] = [[one if a == b == k else zero for b in range(3)] for a in range(3)]
    m[i][i], m[i][j], m[j][i], m[j][j] = c, -s, s, c
    return jnp.stack([jnp.stack(r, axis=-1) for r in m], axis=-2)


def from_euler(angles: Float[ArrayLike, "... 3"], sequence: str = "321") -> Float[Array, "... 3 3"]:
    """R of Euler angles: "321" (ψ, θ, φ) → R_z(ψ) R_y(θ) R_x(φ); "313" (φ, θ, ψ) →
    R_z(φ) R_x(θ) R_z(ψ) (radians; see the module docstring)."""
    seq = _sequence(sequence)
    a = jnp.asarray(angles)
    if a.shape[-1:] != (3,):
        raise InputError("angles", f"expected three angles (a last axis of 3), got shape {a.shape}")
    axes = (2, 1, 0) if seq == "321" else (2, 0, 2)
    R = [_axis(a[..., n], k) for n, k in enumerate(axes)]
    return R[0] @ R[1] @ R[2]


def euler_angles(R: Float[ArrayLike, "... 3 3"], sequence: str = "321") -> Float[Array, "... 3"]:
    """The Euler angles of R, inverse of ``from_euler``: "321" (ψ, θ, φ) with θ in
    [−π/2, π/2], "313" (φ, θ, ψ) with θ in [0, π].  The first angle and the middle one
    (by atan2 of a sine and a cosine: accurate near the poles, where asin is not), then
    the last from R with the first two taken out, so that near gimbal lock, where the
    outer angles are ill-determined apart, they stay consistent and give R back to
    round-off; at gimbal lock the last angle 0."""
    seq = _sequence(sequence)
    M = jnp.asarray(R)
    r = lambda i, j: M[..., i - 1, j - 1]  # noqa: E731 - the textbook's 1-based entries
    tiny = 64 * jnp.finfo(M.dtype).eps
    if seq == "321":
        c = jnp.hypot(r(1, 1), r(2, 1))  # cos θ ≥ 0
        theta = jnp.arctan2(-r(3, 1), c)
        lock = c <= tiny
        psi = jnp.where(lock, jnp.arctan2(-r(1, 2), r(2, 2)), jnp.arctan2(r(2, 1), r(1, 1)))
        cp, sp = jnp.cos(psi), jnp.sin(psi)
        # R_z(ψ)ᵀ R has rows 2, 3 of R_y(θ) R_x(φ): (0, cos φ, −sin φ) in its row 2
        phi = jnp.arctan2(sp * r(1, 3) - cp * r(2, 3), cp * r(2, 2) - sp * r(1, 2))
        return jnp.stack([psi, theta, jnp.where(lock, 0.0, phi)], axis=-1)
    s = jnp.hypot(r(1, 3), r(2, 3))  # sin θ ≥ 0
    theta = jnp.arctan2(s, r(3, 3))
    lock = s <= tiny
    phi = jnp.where(lock, jnp.arctan2(r(2, 1), r(1, 1)), jnp.arctan2(r(1, 3), -r(2, 3)))
    cf, sf = jnp.cos(phi), jnp.sin(phi)
    # R_z(φ)ᵀ R has row 1 of R_x(θ) R_z(ψ): (cos ψ, −sin ψ, 0)
    psi = jnp.arctan2(-(cf * r(1, 2) + sf * r(2, 2)), cf * r(1, 1) + sf * r(2, 1))
    return jnp.stack([phi, theta, jnp.where(lock, 0.0, psi)], axis=-1)


def from_axis_angle(v: Float[ArrayLike, "... 3"]) -> Float[Array, "... 3 3"]:
    """R = exp(hat(v)), the rotation by |v| about v/|v| (``lie.so3.exp``)."""
    return so3.exp(jnp.asarray(v))


def axis_angle(R: Float[ArrayLike, "... 3 3"]) -> Float[Array, "... 3"]:
    """The axis–angle vector θ n of R (0 ≤ θ ≤ π), from its unit quaternion:
    θ = 2 atan2(|u|, w), accurate for every angle (no arccos of the trace)."""
    q = quaternion(R)
    w, u = q[..., :1], q[..., 1:]
    s = jnp.linalg.norm(u, axis=-1, keepdims=True)
    small = s < 1e-8
    theta = 2.0 * jnp.arctan2(s, w)
    scale = jnp.where(small, 2.0 / jnp.where(small, w, 1.0), theta / jnp.where(small, 1.0, s))
    return scale * u


def lvlh(r: Float[ArrayLike, "... 3"], v: Float[ArrayLike, "... 3"]) -> Float[Array, "... 3 3"]:
    """The LVLH frame of an orbit at position r and velocity v: the matrix whose columns
    are its x (along track), y (against the angular momentum) and z (nadir) axes in the
    space frame."""
    ra, va = jnp.asarray(r), jnp.asarray(v)
    z = -ra / jnp.linalg.norm(ra, axis=-1, keepdims=True)
    h = jnp.cross(ra, va)
    y = -h / jnp.linalg.norm(h, axis=-1, keepdims=True)
    x = jnp.cross(y, z)
    return jnp.stack([x, y, z], axis=-1)


def roll_pitch_yaw(R: Float[ArrayLike, "... 3 3"], r: Float[ArrayLike, "... 3"],
                   v: Float[ArrayLike, "... 3"]) -> Float[Array, "... 3"]:  # fmt: skip
    """(roll, pitch, yaw) of the attitude R (body → space) in the LVLH frame of the orbit
    at (r, v): the "321" angles of ``lvlh(r, v)ᵀ R``; all zero when the body's axes are
    the LVLH axes."""
    rel = jnp.swapaxes(lvlh(r, v), -1, -2) @ jnp.asarray(R)
    psi, theta, phi = jnp.moveaxis(euler_angles(rel, "321"), -1, 0)
    return jnp.stack([phi, theta, psi], axis=-1)


def circular_orbit(mu: float, radius: float, inclination: float = 0.0, node: float = 0.0,
                   phase: float = 0.0) -> tuple[Array, Array, Array, Array]:  # fmt: skip
    """A satellite on a circular orbit of ``radius`` about a point mass ``mu`` (its
    ascending node at angle ``node`` on the x–y plane, ``inclination`` to it, ``phase``
    the angle from the node), its body axes on the LVLH axes and turning with them:
    (r, v, R, ω) with |v| = √(μ/r), R = lvlh(r, v) and ω the body angular velocity
    (0, −n, 0), n = √(μ/r³) the orbit's rate (the LVLH frame turns at −n about its y
    axis).  For ``RigidBodies``: x = r, p = m v, Π = 𝕁 ω."""
    if not mu > 0 or not radius > 0:
        raise InputError("mu" if not mu > 0 else "radius", "must be > 0",
                         "a positive gravitational parameter and orbit radius")  # fmt: skip
    u = jnp.asarray([jnp.cos(phase), jnp.sin(phase), 0.0])
    w = jnp.asarray([-jnp.sin(phase), jnp.cos(phase), 0.0])
    tilt = from_euler(jnp.asarray([node, 0.0, inclination]), "321")  # R_z(Ω) R_x(i)
    speed = (mu / radius) ** 0.5
    r, v = radius * (tilt @ u), speed * (tilt @ w)
    n = speed / radius
    return r, v, lvlh(r, v), jnp.asarray([0.0, -n, 0.0])
