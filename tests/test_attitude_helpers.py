"""mechint.attitude against SciPy's ``Rotation`` (an independent implementation):
quaternions, "321" and "313" Euler angles, axis–angle vectors, over random rotations and
the hard corners (the identity, half turns, gimbal lock and next to it); round trips to
round-off; the LVLH frame and a circular orbit's start."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import mechint as mi
from mechint import attitude as A

RNG = np.random.default_rng(7)
EPS = np.finfo(float).eps


def _rotations():
    """Random rotations, and the corners: identity, half turns about axes and a diagonal,
    "321" gimbal lock (pitch ±π/2) and 1e-9 from it, "313" with θ = 0, π and 1e-9."""
    R = [Rotation.from_quat(np.random.default_rng(3).normal(size=(200, 4))).as_matrix()]
    corners = [Rotation.identity(), Rotation.from_rotvec([np.pi, 0, 0]),
               Rotation.from_rotvec(np.pi * np.array([1, 1, 1]) / np.sqrt(3)),
               Rotation.from_rotvec([0, 0, np.pi - 1e-12])]  # fmt: skip
    for pitch in (np.pi / 2, -np.pi / 2, np.pi / 2 - 1e-9):
        corners.append(Rotation.from_euler("ZYX", [0.3, pitch, -0.7]))
    for theta in (0.0, np.pi, 1e-9):
        corners.append(Rotation.from_euler("ZXZ", [0.4, theta, 1.1]))
    R.append(np.stack([c.as_matrix() for c in corners]))
    return np.concatenate(R)


R_ALL = _rotations()


def test_quaternions_and_axis_angle_vectors_are_scipys():
    q = np.asarray(A.quaternion(R_ALL))
    want = Rotation.from_matrix(R_ALL).as_quat(canonical=True)  # (x, y, z, w)
    want = np.concatenate([want[:, 3:], want[:, :3]], axis=1)
    # a half turn has q and −q both with w = 0: compare the rotations there
    assert np.max(np.abs(np.asarray(A.from_quaternion(q)) - R_ALL)) < 8 * EPS
    half = np.abs(want[:, 0]) < 1e-6
    assert np.max(np.abs(q[~half] - want[~half])) < 8 * EPS
    assert np.all(q[:, 0] >= 0) and np.allclose(np.linalg.norm(q, axis=1), 1, atol=4 * EPS)
    # any non-zero length
    assert np.max(np.abs(np.asarray(A.from_quaternion(3e5 * q)) - R_ALL)) < 8 * EPS
    v = np.asarray(A.axis_angle(R_ALL))
    assert np.max(np.abs(np.asarray(A.from_axis_angle(v)) - R_ALL)) < 16 * EPS
    scipy_v = Rotation.from_matrix(R_ALL).as_rotvec()
    ok = np.linalg.norm(scipy_v, axis=1) < np.pi - 1e-6  # a half turn's sign is free
    assert np.max(np.abs(v[ok] - scipy_v[ok])) < 64 * EPS
    small = np.array([1e-12, -2e-12, 3e-13])
    assert np.max(np.abs(np.asarray(A.axis_angle(A.from_axis_angle(small))) - small)) < 1e-27


@pytest.mark.parametrize(("sequence", "scipy_seq"), [("321", "ZYX"), ("313", "ZXZ")])
def test_euler_angles_are_scipys_and_round_trip(sequence, scipy_seq):
    angles = np.asarray(A.euler_angles(R_ALL, sequence))
    back = np.asarray(A.from_euler(angles, sequence))
    assert np.max(np.abs(back - R_ALL)) < 16 * EPS  # at gimbal lock too
    with pytest.warns(UserWarning, match="Gimbal lock"):  # SciPy's, at the corners
        want = Rotation.from_matrix(R_ALL).as_euler(scipy_seq)
    assert np.max(np.abs(np.asarray(A.from_euler(want, sequence))
                         - Rotation.from_euler(scipy_seq, want).as_matrix())) < 8 * EPS  # fmt: skip
    # the angles themselves where they are determined (SciPy calls a rotation within 1e-7
    # of the lock locked; both give the rotation above)
    middle = angles[:, 1]
    generic = np.abs(np.cos(middle) if sequence == "321" else np.sin(middle)) > 1e-6
    assert np.max(np.abs(angles[generic] - want[generic])) < 64 * EPS
    if sequence == "321":
        assert np.all(np.abs(middle) <= np.pi / 2)
    else:
        assert np.all((middle >= 0) & (middle <= np.pi))
    with pytest.raises(mi.InputError, match="sequence"):
        A.euler_angles(R_ALL[0], "123")


def test_the_helpers_batch_jit_and_differentiate():
    angles = jnp.asarray(RNG.uniform(-1, 1, (5, 3)))
    jitted = jax.jit(jax.vmap(lambda a: A.euler_angles(A.from_euler(a))))(angles)
    assert np.max(np.abs(np.asarray(jitted) - np.asarray(angles))) < 1e-14
    # d(pitch)/d(pitch) = 1 through the matrix and back
    g = jax.grad(lambda a: A.euler_angles(A.from_euler(a))[1])(angles[0])
    assert np.allclose(np.asarray(g), [0.0, 1.0, 0.0], atol=1e-12)


def test_lvlh_frame_and_a_circular_orbits_start():
    """On a circular orbit the LVLH axes are along track, against the angular momentum
    and to the centre; a body started on them has zero roll, pitch and yaw, and keeps
    them along the orbit when it turns at the LVLH rate (exact Kepler motion, the body
    turned by exp(t ω))."""
    mu, radius = 398600.4418, 6778.0  # km^3/s^2, km (400 km altitude)
    r, v, R, w = A.circular_orbit(mu, radius, inclination=0.9, node=0.4, phase=1.3)
    r, v, R, w = (np.asarray(a) for a in (r, v, R, w))
    assert abs(np.linalg.norm(r) - radius) < 1e-9 and abs(v @ r) < 1e-9
    assert abs(np.linalg.norm(v) - np.sqrt(mu / radius)) < 1e-12
    assert np.allclose(R[:, 0], v / np.linalg.norm(v), atol=1e-15)
    assert np.allclose(R[:, 2], -r / radius, atol=1e-15)
    assert np.allclose(R.T @ R, np.eye(3), atol=4 * EPS) and np.linalg.det(R) > 0
    assert np.allclose(np.asarray(A.roll_pitch_yaw(R, r, v)), 0.0, atol=1e-15)
    n = np.sqrt(mu / radius**3)
    assert np.allclose(w, [0.0, -n, 0.0])
    for t in (10.0, 1234.5):  # the orbit by rotation about the normal, the body by exp(t ω)
        h = np.cross(r, v) / np.linalg.norm(np.cross(r, v))
        turn = np.asarray(A.from_axis_angle(n * t * h))
        rt, vt, Rt = turn @ r, turn @ v, R @ np.asarray(A.from_axis_angle(t * w))
        assert np.allclose(np.asarray(A.roll_pitch_yaw(Rt, rt, vt)), 0.0, atol=1e-12)
    # a yawed body reads as yaw
    yawed = R @ np.asarray(A.from_euler(np.array([0.2, 0.0, 0.0])))
    assert np.allclose(np.asarray(A.roll_pitch_yaw(yawed, r, v)), [0.0, 0.0, 0.2], atol=1e-15)
    with pytest.raises(mi.InputError, match="radius"):
        A.circular_orbit(mu, -1.0)
