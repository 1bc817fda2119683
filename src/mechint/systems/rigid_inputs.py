"""The inputs of ``systems.RigidBodies``, validated: inertia tensors, masses, attitudes
(matrices, quaternions, Euler angles), potential references, the potential's checks at
construction (finite, its declared symmetries), and a state from command-line options.
Every error is an ``InputError`` naming the parameter."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from mechint._validate import (
    function_reference,
    real_array,
    real_output,
    reference,
    rotation_tolerance,
    traced,
)
from mechint.errors import InputError, SpecialCaseWarning
from mechint.systems.base import required
from mechint.systems.rigid import haar_so

if TYPE_CHECKING:
    from mechint.systems.rigid_bodies import RigidBodies

# Relative round-off accepted in a symmetric inertia tensor or a triangle inequality.
_INERTIA_RTOL = 1e-12
# A declared symmetry holds when the total force (torque) is this small against the
# sum of the forces' (torques') sizes.
_SYMMETRY_RTOL = 1e-9


def lead_shape(a, core: int) -> tuple[int, ...]:
    return tuple(np.shape(a)[: np.ndim(a) - core])


def inertia_tensors(inertia) -> tuple[np.ndarray, np.ndarray | None]:
    """(principal moments (N, 3), principal axes (N, 3, 3) or None) of ``inertia``:
    moments (N, 3) (or (3,) for one body) or tensors (N, 3, 3), validated."""
    arr = real_array("inertia", inertia)
    if arr.ndim == 1:
        arr = arr[None]
    if traced(arr):  # inside a transform (e.g. jax.grad by the moments): the shape only
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise InputError("inertia", f"a traced inertia must be moments (N, 3), got {arr.shape}")
        return arr, None
    if arr.ndim == 2 and arr.shape[1] == 3 and len(arr):
        moments, axes = arr, None
    elif arr.ndim == 3 and arr.shape[1:] == (3, 3) and len(arr):
        scale = np.max(np.abs(arr), axis=(1, 2))
        asym = np.max(np.abs(arr - np.swapaxes(arr, 1, 2)), axis=(1, 2))
        if np.any(asym > _INERTIA_RTOL * scale):
            b = int(np.argmax(asym / np.where(scale > 0, scale, 1.0)))
            raise InputError(
                "inertia",
                f"the tensor of body {b} is not symmetric (max |𝕁 − 𝕁ᵀ| = {asym[b]:.3g})",
                "give symmetric 3x3 inertia tensors, or principal moments of shape (N, 3)",
            )
        sym = 0.5 * (arr + np.swapaxes(arr, 1, 2))
        off = sym - np.einsum("nii->ni", sym)[:, :, None] * np.eye(3)
        if not np.any(off):
            moments, axes = np.einsum("nii->ni", sym).copy(), None
        else:
            moments, axes = np.linalg.eigh(sym)
            axes[:, :, 2] *= np.sign(np.linalg.det(axes))[:, None]  # a rotation
    else:
        raise InputError(
            "inertia",
            f"expected principal moments of shape (N, 3) or tensors (N, 3, 3), got shape "
            f"{arr.shape}",
            "e.g. [[1, 2, 2.5]] for one body",
        )
    if np.any(moments <= 0):
        b = int(np.argmin(np.min(moments, axis=1)))
        raise InputError(
            "inertia",
            f"body {b} has moments {tuple(moments[b].tolist())}: every principal moment "
            "must be > 0",
        )
    total = np.sum(moments, axis=1, keepdims=True)
    excess = moments - (total - moments)  # I_i − (I_j + I_k)
    if np.any(excess > _INERTIA_RTOL * total):
        b = int(np.argmax(np.max(excess / total, axis=1)))
        raise InputError(
            "inertia",
            f"body {b} has moments {tuple(moments[b].tolist())}, which break the triangle "
            "inequality I_i ≤ I_j + I_k (no mass distribution has them)",
            "check the units and the axes of the moments",
        )
    moments = np.where(excess > 0, total - moments, moments)  # planar: I_i = I_j + I_k
    return moments, axes


def mass_array(mass, n: int) -> Any:
    if mass is None:
        return None
    arr = real_array("mass", mass)
    if arr.ndim == 0 or arr.shape == (1,):  # one for all (the command line's "1")
        arr = arr.reshape(())
        arr = jnp.full(n, arr) if traced(arr) else np.full(n, float(arr))
    if arr.shape != (n,):
        raise InputError("mass", f"expected one mass per body ({n}), got shape {arr.shape}")
    if traced(arr):
        return arr
    if np.any(arr <= 0):
        raise InputError("mass", f"every mass must be > 0, got {tuple(arr.tolist())}")
    return arr


# A matrix given on the command line (--R0) whose rows were rounded (to 6 digits, say)
# is moved to the nearest rotation, with a note, up to this defect |RᵀR − 1|.
_ROUNDED_R = 1e-3


def _attitudes(value, n: int) -> np.ndarray:
    """``--R0``: per body a row of 9 numbers (R row by row; re-orthogonalised with a
    ``SpecialCaseWarning`` where rounded, up to ``_ROUNDED_R``), 4 (a quaternion w, x,
    y, z of any length) or 3 (yaw, pitch, roll, radians, ``attitude.from_euler``
    "321"); (n, 3, 3) rotations, else ``InputError`` naming --R0."""
    from mechint import attitude

    arr = np.asarray(value, dtype=float).reshape(-1)
    width = arr.size // n if n and arr.size % n == 0 else 0
    if width not in (9, 4, 3) or not np.all(np.isfinite(arr)):
        raise InputError("R0", f"expected {n} rows of 9 numbers (R row by row), 4 (a "
                         f"quaternion w,x,y,z) or 3 (yaw, pitch, roll in radians), one row "
                         f"per body, got {arr.size} numbers" + ("" if np.all(np.isfinite(arr))
                                                                else " (not all finite)"),
                         "e.g. --R0 1,0,0,0 (the identity as a quaternion)")  # fmt: skip
    rows = arr.reshape(n, width)
    if width == 4:
        if np.any(np.linalg.norm(rows, axis=1) == 0):
            raise InputError("R0", "a quaternion of length 0 is no rotation",
                             "e.g. 1,0,0,0 for the identity")  # fmt: skip
        return np.asarray(attitude.from_quaternion(rows))
    if width == 3:
        return np.asarray(attitude.from_euler(rows, "321"))
    R = rows.reshape(n, 3, 3)
    defect = float(np.max(np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3))))
    if rotation_tolerance(R) < defect <= _ROUNDED_R and np.all(np.linalg.det(R) > 0):
        U, _, Vt = np.linalg.svd(R)
        near = U @ Vt
        warnings.warn(f"--R0 re-orthogonalised: max |RᵀR − 1| was {defect:.2g}; the "
                      f"nearest rotations move it by up to {np.max(np.abs(near - R)):.2g}",
                      SpecialCaseWarning, stacklevel=2)  # fmt: skip
        return near
    return R


def rotation_matrices(name: str, value, n: int, lead: tuple[int, ...]) -> np.ndarray:
    """Rotations of shape (*lead, n, 3, 3) from ``value`` as given: orthogonal to round-off
    (``_validate.rotation_tolerance``: 1e-10, or 64 ulps of a float32 input; projected
    onto SO(3), removing it, unless already within 8 ulps of float64), det > 0; else
    ``InputError`` naming ``name``."""
    R = real_array(name, value)
    if R.shape != (*lead, n, 3, 3):
        raise InputError(name, f"expected shape {(*lead, n, 3, 3)}, got {R.shape}")
    defect = np.max(np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)), initial=0.0)
    det = np.linalg.det(R)
    if defect > rotation_tolerance(value) or np.any(det <= 0):
        raise InputError(
            name,
            f"is not a set of rotations (max |RᵀR − 1| = {defect:.2g}, smallest det = "
            f"{np.min(det):.3g})",
            "give attitudes in SO(3) (body → space), e.g. the identity",
        )
    if defect <= 8 * np.finfo(np.float64).eps:  # a rotation to float64's round-off: as
        return R  # given, so that validating a validated state changes no bit
    U, _, Vt = np.linalg.svd(R)
    return U @ Vt  # the nearest rotation (det > 0 kept: the defect is round-off)


@jax.jit
def _probe(system: RigidBodies, pos, R):
    """V, −∂V/∂x and the torques at one state (at t = 0 for a time-dependent V),
    compiled (once per potential function): the construction's checks, without
    op-by-op dispatch."""
    t = jnp.zeros((), R.dtype)
    return system.energy_potential(pos, R, t), *system.forces(pos, R, t)


def potential_function(value) -> Callable | None:
    """A potential: a function, None, or the text "package.module:function" (an
    experiment file's or the command line's reference, imported here; importing runs
    that module, as ``python -c "import package.module"`` would)."""
    if value is None or callable(value):
        return value
    return function_reference("potential", value)


def flag(name: str):
    def parse(text) -> dict:
        word = str(text).strip().lower()
        if word not in ("true", "false", "1", "0", "yes", "no"):
            raise InputError(name, f"expected true or false, got {text!r}")
        return {name: word in ("true", "1", "yes")}

    return parse


def joint_rows(text) -> dict:
    """Joints from text: "a:x,y,z:b:x,y,z" each, separated by ";" (b a body's index or
    ground, the sites in the bodies' frames, or the ground point)."""
    joints = []
    for k, item in enumerate(t for t in str(text).split(";") if t.strip()):
        parts = [p.strip() for p in item.split(":")]
        if len(parts) != 4:
            raise InputError(
                "joints",
                f"joint {k + 1} ({item.strip()!r}) is not a:x,y,z:b:x,y,z",
                'write e.g. "0:0,0,0.5:ground:0,0,0;1:0,0,0.5:0:0,0,-0.5"',
            )

        def site(word: str, k=k) -> tuple:
            try:
                values = tuple(float(v) for v in word.split(","))
            except ValueError:
                values = ()
            if len(values) != 3:
                raise InputError("joints", f"joint {k + 1}: {word!r} is not x,y,z")
            return values

        def body(word: str, k=k):
            if word.lower() == "ground":
                return "ground"
            if not word.lstrip("-").isdigit():
                raise InputError(
                    "joints", f"joint {k + 1}: {word!r} is not a body's index or ground"
                )
            return int(word)

        joints.append((body(parts[0]), site(parts[1]), body(parts[2]), site(parts[3])))
    return {"joints": joints}


def inertia_rows(values) -> dict:
    """Moments (N, 3), or tensors written as rows of 9 numbers (N, 9) → (N, 3, 3)."""
    arr = np.atleast_2d(np.asarray(values, dtype=float))
    if arr.shape[-1] == 9:
        arr = arr.reshape(-1, 3, 3)
    return {"inertia": arr}


def state_from_options(system: RigidBodies, given: dict) -> Any:
    """(x, p, R, Π) from --x0, --p0 (default 0), --R0 (rows of 9; default the
    identity) and --Pi0; errors name the option."""
    n = system.bodies
    if system.translating:
        own = ("x0", "p0", "R0", "Pi0")
    else:
        own = ("R0", "Pi0")
        for option in ("x0", "p0"):
            if given.get(option) is not None:
                raise InputError(option, "the centres are fixed (no --mass)")

    def rows(option, value, width):
        arr = np.asarray(value, dtype=float)
        if arr.size != n * width:
            raise InputError(
                option, f"expected {n} rows of {width} numbers (N = {n}), got {arr.size}"
            )
        return arr.reshape(n, width)

    R = given.get("R0")
    R = np.broadcast_to(np.eye(3), (n, 3, 3)) if R is None else _attitudes(R, n)
    Pi = rows("Pi0", required(given, "Pi0", system.name, "give a row per body"), 3)
    parts = {"R0": np.reshape(R, (n, 3, 3)), "Pi0": Pi}
    if system.translating:
        parts["x0"] = rows("x0", required(given, "x0", system.name, "a row per body"), 3)
        p = given.get("p0")
        parts["p0"] = np.zeros((n, 3)) if p is None else rows("p0", p, 3)
    try:
        # the shapes and rotations; the joints' manifold is judged by the run (after
        # --project, which moves a state there)
        return validated_state(system, tuple(parts[o] for o in own), "x0")[0]
    except InputError as exc:
        field = exc.parameter.partition("(")[2].rstrip(")") or "Pi"
        raise InputError(f"{field}0", exc.problem, exc.fix) from None


def check_potential(system: RigidBodies, translation: bool, rotation: bool) -> None:
    """V returns a finite scalar at generic states, and its declared symmetries hold
    (inside a transform, with traced inertia, masses or parameters, the shape only)."""
    if traced((system.inertia, system.mass)):
        n = system.bodies
        R = jnp.broadcast_to(jnp.eye(3), (n, 3, 3))
        pos = jnp.zeros((n, 3)) if system.translating else None
        out = jax.eval_shape(system.energy_potential, pos, R, jnp.zeros(()))
        if getattr(out, "shape", None) != ():
            raise InputError("potential", f"must return a scalar, returned {out}")
        return
    x0 = system.example_state()
    pos, _, R, _ = system.parts(tuple(jnp.asarray(a) for a in x0))
    probe = (pos, R) if system.translating else (R,)
    try:
        out = jax.eval_shape(
            system.energy_potential, *((pos, R) if system.translating else (None, R)),
            jnp.zeros(()),
        )  # fmt: skip
    except Exception as exc:  # any failure to trace is the user's function's fault
        shapes = ", ".join(str(tuple(a.shape)) for a in probe)
        raise InputError(
            "potential",
            f"could not be evaluated on arrays of shapes {shapes}: {type(exc).__name__}: {exc}",
            "write it with jax.numpy, as V(x, R) (V(R) with mass=None; V(t, x, R) "
            "where time_dependent), plus params if given",
        ) from None
    real_output("potential", out)
    if getattr(out, "shape", None) != ():
        raise InputError(
            "potential",
            f"must return a scalar, returned shape {getattr(out, 'shape', type(out).__name__)}",
            "sum over bodies and sites",
        )
    if traced((system.params, system.inertia, system.mass)):
        return  # the numbers are unknown inside a transform: checked where given
    rng = np.random.default_rng(1)
    states = [(pos, R)]
    Q = jnp.asarray(haar_so(rng, 1, 3)[0])
    shift = jnp.asarray(rng.standard_normal(3))
    states.append(((None if pos is None else pos @ Q.T + shift), Q @ R))
    if pos is not None and (translation or rotation):  # the bodies spread far apart:
        # a symmetry broken only far from the lattice (a wall) is seen there too
        states += [(p * spread, r) for p, r in states[:2] for spread in (30.0, 1000.0)]
    for k, (spos, sR) in enumerate(states):
        value, force, M = _probe(system, spos, sR)
        finite = bool(jnp.isfinite(value)) and bool(jnp.all(jnp.isfinite(M)))
        finite = finite and (force is None or bool(jnp.all(jnp.isfinite(force))))
        if not finite and k >= 2:  # spread states: where V is finite only
            continue
        spread = "" if k < 2 else f" (the bodies spread {(30, 1000)[k % 2]} times)"
        where = f"a generic state{spread}"
        if not finite:
            raise InputError(
                "potential",
                "returned a value or gradient that is not finite at a generic state "
                "(bodies 3 apart on a lattice)",
                "check it for divisions by zero and overlapping sites",
            )
        if translation and force is not None:
            total = jnp.sum(force, axis=0)
            size = jnp.sum(jnp.abs(force))
            if float(jnp.max(jnp.abs(total))) > _SYMMETRY_RTOL * float(size) + 1e-300:
                raise InputError(
                    "translation_invariant",
                    "the potential is not translation invariant: the total force is "
                    f"{np.asarray(total)} at {where} (forces of size "
                    f"{float(size):.3g})",
                    "leave translation_invariant out (the momentum P is then not an invariant)",
                )
        if rotation:
            torque = jnp.einsum("nij,nj->i", sR, M)
            size = jnp.sum(jnp.abs(M))
            if force is not None:
                torque = torque + jnp.sum(jnp.cross(spos, force), axis=0)
                lever = jnp.sqrt(jnp.sum(spos * spos, -1) * jnp.sum(force * force, -1))
                size = size + jnp.sum(lever)  # |x_b||F_b|: the size of each term
            if float(jnp.max(jnp.abs(torque))) > _SYMMETRY_RTOL * float(size) + 1e-300:
                raise InputError(
                    "rotation_invariant",
                    f"the potential is not rotation invariant: the total torque is "
                    f"{np.asarray(torque)} at {where}",
                    "leave rotation_invariant out (the momentum L is then not an invariant)",
                )


def validated_state(system: RigidBodies, x, name: str) -> tuple[tuple, bool]:
    """The arrays of a state of ``system`` (``RigidBodies.validate_state``): each field's
    shape, R a rotation (a matrix within 1e-3 re-orthogonalised, as given otherwise)."""
    names = [f for f, _ in system.state_fields]
    clock = None
    if system.time_dependent:
        names = names[:-2]
        if isinstance(x, tuple | list) and len(x) == len(names) + 2:
            x, clock = x[:-2], x[-2:]
    if not isinstance(x, tuple | list) or len(x) != len(names):
        raise InputError(
            name,
            f"expected a tuple ({', '.join(names)}), got "
            + (f"{len(x)} arrays" if isinstance(x, tuple | list) else type(x).__name__),
        )
    n = system.bodies
    arrays = {f: real_array(f"{name} ({f})", v) for f, v in zip(names, x, strict=True)}
    Pi = arrays["Pi"]
    if Pi.shape[-2:] != (n, 3) or Pi.ndim not in (2, 3):
        raise InputError(
            f"{name} (Pi)",
            f"expected shape ({n}, 3) (or a batch (B, {n}, 3)), got {Pi.shape}",
            f"give one body angular momentum per body: this system has N = {n}",
        )
    lead = Pi.shape[:-2]
    for f in names:
        want = (*lead, n, 3, 3) if f == "R" else (*lead, n, 3)
        if arrays[f].shape != want:
            raise InputError(f"{name} ({f})", f"expected shape {want}, got {arrays[f].shape}")
    given = x[names.index("R")]  # as given: a float32 R to float32 round-off
    arrays["R"] = rotation_matrices(f"{name} (R)", given, n, lead)
    state = tuple(arrays[f] for f in names)
    if system.time_dependent:  # (t, e): given, or 0 (the time then takes the run's t0)
        if clock is None:
            clock = (np.zeros(lead), np.zeros(lead))
        labels = ("now", "e")
        clock = tuple(real_array(f"{name} ({f})", v) for f, v in zip(labels, clock, strict=True))
        for f, v in zip(labels, clock, strict=True):
            if v.shape != lead:
                raise InputError(f"{name} ({f})", f"expected shape {lead}, got {v.shape}")
        state = (*state, *clock)
    return state, bool(lead)


def example_state(system: RigidBodies) -> Any:
    """The bodies of ``RigidBodies.example_state`` on a lattice (joints not applied)."""
    rng = np.random.default_rng(0)
    n = system.bodies
    side = int(np.ceil(n ** (1 / 3)))
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = 3.0 * (grid[:n] - 0.5 * (side - 1)) + 0.1 * rng.standard_normal((n, 3))
    R = haar_so(rng, n, 3)
    Pi = 0.5 * rng.standard_normal((n, 3)) * np.asarray(system.inertia)
    clock = (np.zeros(()), np.zeros(())) if system.time_dependent else ()
    if not system.translating:
        return R, Pi, *clock
    p = 0.2 * rng.standard_normal((n, 3)) * np.asarray(system.mass)[:, None]
    return pos, p, R, Pi, *clock


def parameters(system: RigidBodies) -> Any:
    """``RigidBodies.parameters``: the numbers and references that rebuild it."""
    out: dict[str, Any] = {
        "inertia": np.asarray(system.inertia).tolist(),
        "mass": None if system.mass is None else np.asarray(system.mass).tolist(),
        "potential": None if system.potential is None else reference(system.potential),
        "translation_invariant": system.translation_invariant,
        "rotation_invariant": system.rotation_invariant,
    }
    if system.time_dependent:
        out["time_dependent"] = True
    if system.joints:
        out["joints"] = [[j.a, list(j.site_a), j.b, list(j.site_b)] for j in system.joints]
    if system.axes is not None:
        out["axes"] = np.asarray(system.axes).tolist()
    if system.params is not None:
        out["params"] = jax.tree.map(lambda a: np.asarray(a).tolist(), system.params)
    return out
