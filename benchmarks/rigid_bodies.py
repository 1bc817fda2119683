"""Speed and energy error of mechint's rigid-body integrators, against JAX MD's rigid bodies.

    python benchmarks/rigid_bodies.py [--quick] [--out PATH] [--figure PATH]

1. Free bodies, inertia (1, 1.5, 2), h = 0.01: body-steps/s of LieGroupVariational() and
   RigidBodySplitting() on one body (attitude R and body momentum Π) and on a batch of
   10^4 (leading axis), beside the so(3) Moser–Veselov step (DiscreteLagrangian() on
   EulerTop, Π only) as the reference; the ratio LGVI cost / Moser–Veselov cost
   (target <= 2).
2. A free-space cluster of 64 rigid three-site waters (TIP3P-like: Lennard-Jones on O–O,
   Coulomb between all sites of different molecules; units Å, u, kcal/mol, e, so the
   time unit is Å·(u/(kcal/mol))^½ = 48.888 fs), on a 4^3 lattice of spacing 1.1σ with
   seeded random orientations and small Maxwell–Boltzmann momenta (kT = 0.2 kcal/mol).
   The same potential and the same initial state run through mechint (LGVI,
   RigidBodySplitting()) and JAX MD's rigid-body NVE (jax_md.rigid_body with
   point_union_shape, point_energy, simulate.nve, space.free(): quaternions and their
   conjugate momenta, the NO_SQUISH splitting), at h = 1/32 and 1/64 over the same time:
   steps/s of one trajectory (best of 3 after compilation, the codes timed in turn) and
   the relative energy error max|H − H0|/|H0| by each code's own energy and by one
   common energy (mechint's H, with JAX MD's trajectory converted back).  The initial
   potential and kinetic energies of the two codes are compared first (a conversion
   check: ~1e-15 relative).

3. (not with --quick; needs JAX MD) A periodic box of 10³ rigid waters whose potential is
   JAX MD's: its periodic space, cell-list neighbour list and neighbour-listed pair energy
   (Lennard-Jones O–O and a damped shifted-force Coulomb, cut at 9 Å), taken by mechint's
   ``RigidBodies`` as V(x, R, params) with the list as its params (``WaterBox``), against
   JAX MD's own rigid-body NVE at the same step: steps/s and energy errors.

Every rate is measured after compilation, in one process.  Prints one Markdown block and
writes it to --out (default benchmarks/results/rigid_bodies.md under the repository).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
from functools import partial
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

try:  # the peer, from the bench extra (make bench); without it, mechint's rows only
    with jax.numpy_dtype_promotion("standard"):  # its import computes with mixed dtypes
        from jax_md import energy, partition, rigid_body, simulate, smap, space
except ImportError:
    energy = partition = rigid_body = simulate = smap = space = None

import mechint as mi
from mechint.systems import potentials
from mechint.systems.rigid import haar_so

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent if HERE.name == "benchmarks" else Path.cwd()
try:
    from _timing import best_of
except ImportError:  # run from a copy outside benchmarks/: the repository's helper
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _timing import best_of

I = mi.integrators
LGVI = I.LieGroupVariational()
SPLIT = I.RigidBodySplitting()

# -- part 1: free bodies ---------------------------------------------------------------------
INERTIA = (1.0, 1.5, 2.0)
M0 = np.array([0.45, 0.0, 0.89])
H_FREE = 0.01
BATCH = 10**4
REPEAT_FREE = 5  # short runs: best of 5

# -- part 2: the water cluster (units: Å, u, kcal/mol, e; time unit 48.888 fs) ------------
TIME_UNIT_FS = 48.888
K_COULOMB = 332.0637  # kcal Å / (mol e²)
SIGMA_O, EPS_O = 3.15061, 0.1521  # TIP3P O–O Lennard-Jones (Å, kcal/mol)
RAW_SITES = np.array([[0.0, 0.0, 0.0], [0.757, 0.586, 0.0], [-0.757, 0.586, 0.0]])  # O, H, H
SITE_MASSES = np.array([16.0, 1.0, 1.0])
CHARGES = np.array([-0.834, 0.417, 0.417])
SIDE = 4  # 4^3 = 64 molecules
SPACING = 1.1 * SIGMA_O
KT = 0.2  # kcal/mol (≈ 100 K): small initial momenta
H_CLUSTER = (1 / 32, 1 / 64)  # exact in float32 (jax-md's velocity Verlet casts dt to f32)
SAVE = 10  # energies sampled every SAVE steps

# -- part 3: a periodic box of waters (JAX MD's space and neighbour list as the potential) -----
BOX_SIDE = 10  # 10^3 molecules
DENSITY = 0.0334  # molecules / Å³ (liquid water, 0.997 g/cm³)
R_CUT, R_ONSET, ALPHA = 9.0, 8.0, 0.2  # Å, Å, 1/Å (damped shifted-force Coulomb)
SKIN = 2.0  # Å: the neighbour list holds the pairs within R_CUT + SKIN
BOX_KT = 0.6  # kcal/mol (≈ 300 K)
BOX_STEPS = 100


def interleaved(fns: dict, work: dict, repeat: int) -> dict:
    """Each function called once (compiling), then ``repeat`` rounds calling each in turn,
    so that a varying machine load hits all alike: per name, (work per second of its
    fastest call, compile-and-first-call overhead in s, what its last call returned)."""
    first = {k: best_of(f, 1).best for k, f in fns.items()}
    best, out = dict.fromkeys(fns, math.inf), {}
    for _ in range(repeat):
        for k, f in fns.items():
            t = best_of(f, 1)
            best[k], out[k] = min(best[k], t.best), t.result
    return {k: (work[k] / best[k], max(first[k] - best[k], 0.0), out[k]) for k in fns}


# -- part 1 ----------------------------------------------------------------------------------
def free_bodies(quick: bool) -> tuple[list[str], dict]:
    batch = 100 if quick else BATCH
    body = mi.systems.RigidBodies([INERTIA])
    top = mi.systems.EulerTop(INERTIA)
    mv = I.DiscreteLagrangian()
    rng = np.random.default_rng(0)
    R1 = haar_so(rng, 1, 3)
    Rb = haar_so(rng, batch, 3)[:, None]
    Pib = rng.standard_normal((batch, 1, 3))
    steps = 10**3 if quick else 10**5
    bsteps = 10 if quick else 200
    cases = [
        ("mechint LieGroupVariational()", "1 body", body, LGVI, (R1, M0[None]), steps, 100),
        ("mechint RigidBodySplitting()", "1 body", body, SPLIT, (R1, M0[None]), steps, 100),
        ("Moser–Veselov: DiscreteLagrangian(), EulerTop", "1 body", top, mv, M0, steps, 100),
        ("mechint LieGroupVariational()", f"{batch} bodies", body, LGVI, (Rb, Pib), bsteps, 0),
        ("mechint RigidBodySplitting()", f"{batch} bodies", body, SPLIT, (Rb, Pib), bsteps, 0),
        ("Moser–Veselov: DiscreteLagrangian(), EulerTop", f"{batch} bodies", top, mv,
         Pib[:, 0], bsteps, 0),
    ]  # fmt: skip
    rows = [
        f"### 1. Free bodies, inertia {INERTIA}, h = {H_FREE}",
        "",
        "| method | problem | steps | rate (body-steps/s) | compile s |",
        "|---|---|---|---|---|",
    ]
    fns, work = {}, {}
    for name, problem, system, integrator, x0, n, every in cases:
        key = f"{name} / {problem}"
        fns[key] = partial(mi.simulate, system, integrator, x0, H_FREE, n, every or n)
        work[key] = n * (1 if problem == "1 body" else batch)
    timed = interleaved(fns, work, 1 if quick else REPEAT_FREE)
    rates = {k: r for k, (r, _, _) in timed.items()}
    for (name, problem, *_, n, _), (rate, comp, _) in zip(cases, timed.values(), strict=True):
        rows.append(f"| {name} | {problem} | {n} | {rate:.3e} | {comp:.2f} |")
    ratio = {
        p: rates[f"Moser–Veselov: DiscreteLagrangian(), EulerTop / {p}"]
        / rates[f"mechint LieGroupVariational() / {p}"]
        for p in ("1 body", f"{batch} bodies")
    }
    rows += [
        "",
        "LGVI cost / Moser–Veselov cost (target <= 2): "
        + ", ".join(f"{r:.2f} ({p})" for p, r in ratio.items())
        + ".  The LGVI also carries the attitude R; the Moser–Veselov step carries Π only.",
    ]
    return rows, ratio


# -- part 2 ----------------------------------------------------------------------------------
def quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (body → space) of unit quaternions q = (w, x, y, z): R s = q s q̄,
    JAX MD's ``quaternion_rotate``."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


class Cluster:
    """The water cluster in both codes: the same sites (JAX MD's principal frame), the same
    pair sum, the same initial state."""

    def __init__(self, side: int):
        com = SITE_MASSES @ RAW_SITES / SITE_MASSES.sum()
        n, s = side**3, len(RAW_SITES)
        self.n, self.side = n, side
        self.peer = rigid_body is not None
        if self.peer:
            # point_radius 0: point masses (JAX MD's default gives each site a sphere of
            # radius 0.5, which would add 0.1 m Å² to every moment)
            shape = rigid_body.point_union_shape(
                jnp.asarray(RAW_SITES - com), jnp.asarray(SITE_MASSES)
            ).set(point_radius=0.0)
            self.shape = shape
            self.jmass = shape.mass()  # RigidBody(total mass (1,), principal moments (1, 3))
            self.sites = np.asarray(shape.points)  # about the centre of mass, principal
            moments = np.asarray(self.jmass.orientation)[0]
        else:  # the principal frame of our own
            r = RAW_SITES - com
            J = np.einsum("s,sij->ij", SITE_MASSES, (r * r).sum(1)[:, None, None] * np.eye(3)
                          - np.einsum("si,sj->sij", r, r))  # fmt: skip
            moments, axes = np.linalg.eigh(J)
            self.sites = r @ axes
        self.moments = moments
        eps = np.array([EPS_O, 0.0, 0.0])
        sig = np.full(3, SIGMA_O)
        sites = self.sites

        def V(x, R):
            return potentials.lennard_jones(x, R, sites, eps, sig) + potentials.coulomb(
                x, R, sites, CHARGES, K_COULOMB
            )

        self.V = V
        self.system = mi.systems.RigidBodies(
            np.tile(moments, (n, 1)),
            mass=float(SITE_MASSES.sum()),
            potential=V,
            translation_invariant=True,
            rotation_invariant=True,
        )

        self.energy = jax.jit(self.system.hamiltonian)  # the common energy: mechint's H
        rng = np.random.default_rng(2024)
        grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
        x = SPACING * (grid - 0.5 * (side - 1))
        q = rng.standard_normal((n, 4))
        q = q / np.linalg.norm(q, axis=1, keepdims=True) * np.sign(q[:, :1])
        p = np.sqrt(SITE_MASSES.sum() * KT) * rng.standard_normal((n, 3))
        p -= p.mean(axis=0)
        Pi = np.sqrt(moments * KT) * rng.standard_normal((n, 3))  # body frame, principal
        self.x0 = (x, p, quaternion_matrix(q), Pi)
        if not self.peer:
            return
        # JAX MD: all site pairs of different molecules, from its free-space displacement
        displacement, self.shift = space.free()
        pairs = space.map_product(displacement)
        mol = np.repeat(np.arange(n), s)
        mask = mol[:, None] < mol[None, :]
        e_s, q_s = np.tile(eps, n), np.tile(CHARGES, n)
        eps_ij = np.sqrt(e_s[:, None] * e_s[None, :])
        sig_ij = np.full((n * s, n * s), SIGMA_O)
        qq_ij = K_COULOMB * q_s[:, None] * q_s[None, :]

        def site_energy(pos):
            d = pairs(pos, pos)
            r = jnp.sqrt(jnp.where(mask, jnp.sum(d * d, axis=-1), 1.0))
            e = energy.lennard_jones(r, sig_ij, eps_ij) + qq_ij / r
            return jnp.sum(jnp.where(mask, e, 0.0))

        self.jenergy = rigid_body.point_energy(site_energy, shape)
        self.body0 = rigid_body.RigidBody(jnp.asarray(x), rigid_body.Quaternion(jnp.asarray(q)))
        self.momentum0 = self.to_jaxmd_momentum(self.body0, p, Pi)

    @staticmethod
    def to_jaxmd_momentum(body, p, Pi):
        """JAX MD's momentum: linear p, and the quaternion's conjugate momentum
        P = 2 S(q) (0, Π) of the body angular momentum Π (Miller et al. 2002)."""
        return rigid_body.RigidBody(
            jnp.asarray(p),
            rigid_body.angular_momentum_to_conjugate_momentum(body.orientation, jnp.asarray(Pi)),
        )

    @staticmethod
    def from_jaxmd(body, momentum):
        """mechint's (x, p, R, Π) of JAX MD states (any leading axes): R of the normalised
        quaternion, Π = ½ S(q)ᵀ P without its zeroth component."""
        qv = body.orientation.vec
        Pi = rigid_body.conjugate_momentum_to_angular_momentum(
            body.orientation, momentum.orientation
        )
        R = quaternion_matrix(np.asarray(qv / jnp.linalg.norm(qv, axis=-1, keepdims=True)))
        return (body.center, momentum.center, jnp.asarray(R), Pi)

    def jaxmd_energy(self, body, momentum):
        return self.jenergy(body) + rigid_body.kinetic_energy(body, momentum, self.jmass)

    def check(self) -> list[str]:
        """The two codes' potential and kinetic energies, and site positions, at x0."""
        x, p, R, Pi = (jnp.asarray(a) for a in self.x0)
        Vm = float(self.V(x, R))
        Tm = float(self.system.hamiltonian((x, p, R, Pi))) - Vm
        Vj = float(self.jenergy(self.body0))
        Tj = float(rigid_body.kinetic_energy(self.body0, self.momentum0, self.jmass))
        ours = np.asarray(potentials.site_positions(x, R, self.sites)).reshape(-1, 3)
        theirs = np.asarray(rigid_body.union_to_points(self.body0, self.shape)[0])
        dV, dT = abs(Vj - Vm) / abs(Vm), abs(Tj - Tm) / abs(Tm)
        dsite = float(np.max(np.abs(ours - theirs)))
        ok = "OK" if max(dV, dT) < 1e-12 and dsite < 1e-12 else "MISMATCH: a conversion bug"
        return [
            f"Initial state, both codes: V = {Vm:.6f}, T = {Tm:.6f} kcal/mol (mechint); "
            f"|ΔV|/|V| = {dV:.1e}, |ΔT|/T = {dT:.1e}, max |Δ site position| = {dsite:.1e} Å "
            f"({ok})."
        ]

    def mechint_run(self, integrator, h, steps):
        """One trajectory by mechint (a callable), energies every SAVE steps."""
        return partial(mi.simulate, self.system, integrator, self.x0, h, steps, SAVE)

    def jaxmd_run(self, h, steps):
        """One trajectory by JAX MD (a callable): its saved (bodies, momenta)."""
        init_fn, step_fn = simulate.nve(self.jenergy, self.shift, dt=h)
        state0 = init_fn(
            jax.random.PRNGKey(0), self.body0, 0.0, mass=self.jmass, momenta=self.momentum0
        )

        @jax.jit
        def run(state):
            def save(s, _):
                s = jax.lax.fori_loop(0, SAVE, lambda _, s: step_fn(s), s)
                return s, (s.position, s.momentum)

            return jax.lax.scan(save, state, None, length=steps // SAVE)[1]

        return lambda: jax.block_until_ready(run(state0))

    def jaxmd_energies(self, saved) -> tuple[np.ndarray, np.ndarray]:
        """(JAX MD's own energy, mechint's H) along a JAX MD trajectory, x0 first."""
        bodies, momenta = saved
        own = np.asarray(jax.jit(jax.vmap(self.jaxmd_energy))(bodies, momenta))
        own = np.concatenate([[float(self.jaxmd_energy(self.body0, self.momentum0))], own])
        common = np.asarray(self.energy(self.from_jaxmd(bodies, momenta)))
        H0 = float(self.energy(tuple(jnp.asarray(a) for a in self.x0)))
        return own, np.concatenate([[H0], common])

    def force_times(self) -> tuple[float, float]:
        """Seconds of one force-and-torque evaluation (jit), mechint and JAX MD."""
        x, _, R, _ = (jnp.asarray(a) for a in self.x0)
        ours = jax.jit(self.system.forces)
        theirs = jax.jit(jax.grad(self.jenergy))
        t1 = best_of(lambda: jax.block_until_ready(ours(x, R)), 20, warm=True).best
        t2 = best_of(lambda: jax.block_until_ready(theirs(self.body0)), 20, warm=True).best
        return t1, t2


# the energy error of each code along the cluster's run at the larger h (for --figure)
CURVES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def figure(path: str) -> None:
    """The cluster's relative energy error against time, one line per code (h = 1/32)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    for label, (t, err) in CURVES.items():
        ax.semilogy(t[1:], err[1:], label=label, lw=1)  # from the first sample after H0
    title = "rigid waters in free space, h = 1/32 (1.53 fs): one potential, one start"
    ax.set(xlabel="t (ps)", ylabel="|H − H0| / |H0|  (mechint's H)", title=title)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rel_error(H: np.ndarray) -> float:
    return float(np.max(np.abs(H - H[0])) / abs(H[0]))


def cluster(quick: bool) -> tuple[list[str], dict]:
    c = Cluster(2 if quick else SIDE)
    repeat = 1 if quick else 3
    base = 100 if quick else 2000
    rows = [
        f"### 2. Cluster of {c.n} rigid TIP3P-like waters, free space",
        "",
        f"Units Å, u, kcal/mol, e (time unit {TIME_UNIT_FS} fs).  Sites O (−0.834 e), "
        "H, H (+0.417 e) at (0, 0, 0), (±0.757, 0.586, 0) Å, masses 16, 1, 1, taken "
        "relative to the centre of mass in JAX MD's principal frame (point masses: "
        f"moments {tuple(np.round(c.moments, 4).tolist())} u Å²).  Lennard-Jones O–O "
        f"(σ = {SIGMA_O} Å, ε = {EPS_O} kcal/mol) + Coulomb (k = {K_COULOMB}) between all "
        f"sites of different molecules, no cut-off.  {c.side}³ lattice of spacing "
        f"{SPACING:.3f} Å (1.1σ), seeded random orientations, Maxwell–Boltzmann momenta "
        f"at kT = {KT} kcal/mol.  Energies sampled every {SAVE} steps.",
        "",
        *(c.check() if c.peer else ["JAX MD is not installed (make bench installs it)."]),
        "",
        "| code | h | steps | steps/s | compile s | max\\|H−H0\\|/\\|H0\\|, own H "
        "| max\\|H−H0\\|/\\|H0\\|, mechint H |",
        "|---|---|---|---|---|---|---|",
    ]
    kinetic = None
    first: dict = {}  # (steps/s, energy error) at the larger h, per code
    for k, h in enumerate(H_CLUSTER[:1] if quick else H_CLUSTER):  # quick: a smoke test
        steps = base * 2**k  # the same time span for each h
        hs = f"1/{round(1 / h)} ({h * TIME_UNIT_FS:.2f} fs)"
        fns = {
            "mechint LieGroupVariational()": c.mechint_run(LGVI, h, steps),
            "mechint RigidBodySplitting()": c.mechint_run(SPLIT, h, steps),
        }
        if c.peer:
            fns[f"JAX MD {version('jax-md')} rigid_body NVE"] = c.jaxmd_run(h, steps)
        timed = interleaved(fns, dict.fromkeys(fns, steps), repeat)
        for name, (rate, comp, result) in timed.items():
            if name.startswith("JAX MD"):
                own, common = c.jaxmd_energies(result)
            else:
                own = common = np.asarray(result.invariants()["H"])
                if kinetic is None:
                    V = jax.vmap(c.V)(jnp.asarray(result.x[0]), jnp.asarray(result.x[2]))
                    kinetic = (own - np.asarray(V))[[0, -1]]
            rows.append(
                f"| {name} | {hs} | {steps} | {rate:.0f} | {comp:.1f} | {rel_error(own):.2e} "
                f"| {rel_error(common):.2e} |"
            )
            if k == 0:
                first[name.split()[0] + " " + name.split()[1]] = (rate, rel_error(common))
                t_ps = np.arange(len(common)) * SAVE * h * TIME_UNIT_FS / 1000
                CURVES[f"{name}: {rate:.0f} steps/s"] = (t_ps, np.abs(common / common[0] - 1))
    if not c.peer:
        return rows, first
    t_ours, t_theirs = c.force_times()
    rows += [
        "",
        f"H0 = {float(c.energy(c.x0)):.4f} kcal/mol; the random orientations relax and the "
        "cluster heats: "
        f"kinetic energy {kinetic[0]:.1f} → {kinetic[1]:.1f} kcal/mol over "
        f"{base * H_CLUSTER[0] * TIME_UNIT_FS / 1000:.2f} ps (LGVI, h = 1/32).  One "
        f"force-and-torque evaluation (jit): mechint {t_ours * 1e3:.2f} ms, JAX MD "
        f"{t_theirs * 1e3:.2f} ms.  A step evaluates it twice in the LGVI (kick, free step, "
        "kick), once in mechint's splitting (free motion around one whole kick) and once in "
        "JAX MD's velocity Verlet (it keeps the force in its state); the rest of the "
        "splitting's step is its two free rotations (five principal rotations each).",
    ]
    return rows, first


# -- part 3 ----------------------------------------------------------------------------------
class WaterBox:
    """10³ rigid waters in a periodic box, the potential JAX MD's: its periodic space, its
    cell-list neighbour list (the pairs of different molecules within R_CUT + SKIN) and a
    neighbour-listed pair energy (``smap.pair_neighbor_list``: Lennard-Jones O–O with
    JAX MD's smooth cut-off from R_ONSET to R_CUT, and the damped shifted-force Coulomb of
    Fennell & Gezelter 2006, α = 0.2/Å, zero with its force at R_CUT).

    mechint's ``RigidBodies`` takes it as V(x, R, params), the list's index table and
    reference positions as its params (numbers: the indices as floats, exact): V updates
    the list from them with JAX MD's own ``update`` (which rebuilds it only where a site
    moved more than SKIN/2 since, so V is right whatever the params' age) and is NaN
    where the list overflowed its capacity, so that the step fails instead of missing
    pairs.  The run is one program: a step of ``integrate`` at a time, the list updated
    after each step (as JAX MD's loop does) and handed to the next as the system's
    params."""

    def __init__(self, side: int):
        n = side**3
        self.n, self.L = n, (n / DENSITY) ** (1 / 3)
        com = SITE_MASSES @ RAW_SITES / SITE_MASSES.sum()
        self.shape = rigid_body.point_union_shape(
            jnp.asarray(RAW_SITES - com), jnp.asarray(SITE_MASSES)
        ).set(point_radius=0.0, point_species=jnp.array([0, 1, 1]))
        self.jmass = self.shape.mass()
        self.sites = np.asarray(self.shape.points)
        moments = np.asarray(self.jmass.orientation)[0]
        displacement, self.shift = space.periodic(self.L)

        def same_molecule(idx):  # a molecule's own sites are not its neighbours
            own = (jnp.arange(idx.shape[0]) // 3)[:, None] == idx // 3
            return jnp.where(own, idx.shape[0], idx)

        self.neighbor_fn = partition.neighbor_list(
            displacement, self.L, R_CUT, dr_threshold=SKIN,
            custom_mask_function=same_molecule, format=partition.Dense,
        )  # fmt: skip
        erfc = jax.scipy.special.erfc
        e_c = math.erfc(ALPHA * R_CUT) / R_CUT
        f_c = (
            e_c / R_CUT + 2 * ALPHA / math.sqrt(math.pi) * math.exp(-((ALPHA * R_CUT) ** 2)) / R_CUT
        )
        lj = energy.multiplicative_isotropic_cutoff(energy.lennard_jones, R_ONSET, R_CUT)

        def pair(dr, qq, sigma, epsilon, **_):
            dr = jnp.where(dr > 0, dr, R_CUT)  # masked entries (a site and itself)
            dsf = qq * (erfc(ALPHA * dr) / dr - e_c + f_c * (dr - R_CUT))
            return lj(dr, sigma=sigma, epsilon=epsilon) + jnp.where(dr < R_CUT, dsf, 0.0)

        eps = np.zeros((2, 2))
        eps[0, 0] = EPS_O
        self.site_energy = smap.pair_neighbor_list(
            pair, space.canonicalize_displacement_or_metric(displacement), species=2,
            qq=jnp.asarray(K_COULOMB * np.outer(CHARGES[:2], CHARGES[:2])),
            sigma=jnp.full((2, 2), SIGMA_O), epsilon=jnp.asarray(eps),
        )  # fmt: skip
        self.species = jnp.tile(jnp.array([0, 1, 1]), n)
        rng = np.random.default_rng(7)
        grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
        x = (grid + 0.5) * (self.L / side)
        q = rng.standard_normal((n, 4))
        self.q0 = q / np.linalg.norm(q, axis=1, keepdims=True) * np.sign(q[:, :1])
        p = np.sqrt(SITE_MASSES.sum() * BOX_KT) * rng.standard_normal((n, 3))
        p -= p.mean(axis=0)
        Pi = np.sqrt(moments * BOX_KT) * rng.standard_normal((n, 3))
        self.x0 = (x, p, quaternion_matrix(self.q0), Pi)
        self.template = self.neighbor_fn.allocate(self.positions(x, self.x0[2]))
        self.system = mi.systems.RigidBodies(
            np.tile(moments, (n, 1)), mass=float(SITE_MASSES.sum()), potential=self.V,
            params=self.params(self.template), translation_invariant=True,
        )  # fmt: skip
        self.energy = jax.jit(jax.vmap(self.system.hamiltonian))

    def positions(self, x, R):
        """The sites (3n, 3), wrapped into the box (JAX MD's cell list asks for it)."""
        return jnp.mod(potentials.site_positions(x, R, self.sites).reshape(-1, 3), self.L)

    @staticmethod
    def params(nbrs) -> dict:
        """A neighbour list as the potential's params: its index table and positions."""
        return {"idx": jnp.asarray(nbrs.idx, jnp.float64), "at": nbrs.reference_position}

    def listed(self, params):
        """The neighbour list that ``params`` hold (``params`` inverted)."""
        return self.template.set(idx=params["idx"].astype(jnp.int32),
                                 reference_position=params["at"])  # fmt: skip

    def V(self, x, R, params):
        P = self.positions(x, R)
        nbrs = self.neighbor_fn.update(P, self.listed(params))
        E = self.site_energy(P, neighbor=nbrs, species=self.species)
        return jnp.where(nbrs.did_buffer_overflow, jnp.nan, E)

    def mechint_run(self, integrator, h, steps):
        """mechint's run (a callable): one program, a step of ``integrate`` at a time with
        the list updated after it and handed to the next as the system's params, as JAX
        MD's loop carries its list; the states every SAVE steps, and whether every step
        held and no list overflowed."""
        leaves, treedef = jax.tree.flatten(self.system)
        held = len(jax.tree.leaves(self.system.params))  # the params' leaves come last

        def one(c, _):
            x, params, ok = c
            system = jax.tree.unflatten(treedef, leaves[: len(leaves) - held]
                                        + jax.tree.leaves(params))  # fmt: skip
            sol = mi.integrate(system, integrator, x, h, 1)
            end = jax.tree.map(lambda a: a[-1], sol.x)
            nbrs = self.neighbor_fn.update(self.positions(end[0], end[2]), self.listed(params))
            fine = sol.ok & ~jnp.asarray(nbrs.did_buffer_overflow, bool)
            return (end, self.params(nbrs), ok & fine), None

        def save(c, _):
            c = jax.lax.scan(one, c, None, length=SAVE)[0]
            return c, c[0]

        @jax.jit
        def run(x):
            c = (x, self.system.params, jnp.asarray(True))
            (_, _, ok), xs = jax.lax.scan(save, c, None, length=steps // SAVE)
            return xs, ok

        x0 = tuple(jnp.asarray(a) for a in self.x0)
        return lambda: jax.block_until_ready(run(x0))

    def jaxmd_run(self, h, steps):
        nfns, body_energy = rigid_body.point_energy_neighbor_list(
            self.site_energy, self.neighbor_fn, self.shape
        )
        body0 = rigid_body.RigidBody(
            jnp.asarray(self.x0[0]), rigid_body.Quaternion(jnp.asarray(self.q0))
        )
        momentum0 = Cluster.to_jaxmd_momentum(body0, self.x0[1], self.x0[3])
        nbrs0 = nfns.allocate(body0)
        init_fn, step_fn = simulate.nve(body_energy, self.shift, dt=h)
        state0 = init_fn(jax.random.PRNGKey(0), body0, 0.0, mass=self.jmass,
                         momenta=momentum0, neighbor=nbrs0)  # fmt: skip
        self.jaxmd_energy0 = float(body_energy(body0, nbrs0)) + float(
            rigid_body.kinetic_energy(body0, momentum0, self.jmass)
        )

        @jax.jit
        def run(state, nbrs):
            def step(_, c):  # JAX MD's loop: a step, then the list updated (rebuilt if due)
                s, nb = c
                s = step_fn(s, neighbor=nb)
                return s, nb.update(s.position)

            def save(c, _):
                s, nb = jax.lax.fori_loop(0, SAVE, step, c)
                own = body_energy(s.position, nb) + rigid_body.kinetic_energy(
                    s.position, s.momentum, self.jmass
                )
                return (s, nb), (own, s.position, s.momentum, nb.did_buffer_overflow)

            return jax.lax.scan(save, (state, nbrs), None, length=steps // SAVE)[1]

        return lambda: jax.block_until_ready(run(state0, nbrs0))

    def common_energy(self, bodies, momenta) -> np.ndarray:
        """mechint's H along a JAX MD trajectory (its states converted)."""
        return np.asarray(self.energy(Cluster.from_jaxmd(bodies, momenta)))


def water_box(quick: bool) -> list[str]:
    """Part 3's table (not in the quick run: the neighbour list's cell-list build alone takes
    about 0.65 s for 3000 sites on the 2-core CPU, and each program compiles in about a
    minute)."""
    if quick or rigid_body is None:
        return []
    box = WaterBox(BOX_SIDE)
    h, steps = H_CLUSTER[0], BOX_STEPS
    x0 = tuple(jnp.asarray(a) for a in box.x0)
    V0 = float(box.V(x0[0], x0[2], box.system.params))
    H0 = float(box.system.hamiltonian(x0))
    fns = {
        "mechint RigidBodySplitting()": box.mechint_run(SPLIT, h, steps),
        "mechint LieGroupVariational()": box.mechint_run(LGVI, h, steps),
        f"JAX MD {version('jax-md')} rigid_body NVE": box.jaxmd_run(h, steps),
    }
    timed = interleaved(fns, dict.fromkeys(fns, steps), 1)
    rows = [
        f"### 3. A periodic box of {box.n} rigid waters: JAX MD's space and neighbour list "
        "as mechint's potential",
        "",
        f"The same sites and masses as the cluster; box side {box.L:.3f} Å "
        f"({DENSITY} molecules/Å³), {box.n * 3} sites; Lennard-Jones O–O with JAX MD's "
        f"smooth cut-off from {R_ONSET} to {R_CUT} Å and the damped shifted-force Coulomb "
        f"(Fennell & Gezelter 2006; α = {ALPHA}/Å, cut at {R_CUT} Å), between the sites of "
        "different molecules, by JAX MD's `pair_neighbor_list` on its `space.periodic` and "
        f"cell-list `neighbor_list` (skin {SKIN} Å, capacity "
        f"{box.template.idx.shape[1]} a site).  mechint's `RigidBodies` takes it as "
        "V(x, R, params) "
        "(`WaterBox.V`: the list's index table and positions as its params, updated by "
        "JAX MD after every step and inside V, V NaN on an overflow); "
        "JAX MD's rigid-body NVE updates its list after every step.  Lattice start, "
        f"seeded random orientations, Maxwell–Boltzmann momenta at kT = {BOX_KT} kcal/mol; "
        f"h = 1/32 (1.53 fs), {steps} steps, energies every {SAVE} steps; one timed run "
        "each after compiling.",
        "",
        f"Initial state: H0 = {H0:.6f} kcal/mol (mechint), V = {V0:.6f}; JAX MD's "
        f"|ΔH|/|H| = {abs(box.jaxmd_energy0 - H0) / abs(H0):.1e}.",
        "",
        "| code | steps/s | compile s | max\\|H−H0\\|/\\|H0\\|, own H "
        "| max\\|H−H0\\|/\\|H0\\|, mechint H | failed or overflowed |",
        "|---|---|---|---|---|---|",
    ]
    for name, (rate, comp, result) in timed.items():
        if name.startswith("JAX MD"):
            own, bodies, momenta, overflow = result
            own = np.concatenate([[box.jaxmd_energy0], np.asarray(own)])
            common = np.concatenate([[H0], box.common_energy(bodies, momenta)])
            bad = bool(np.any(np.asarray(overflow)))
        else:
            states, ok = result
            own = common = np.concatenate([[H0], np.asarray(box.energy(states))])
            bad = not bool(ok)
        rows.append(f"| {name} | {rate:.2f} | {comp:.0f} | {rel_error(own):.2e} "
                    f"| {rel_error(common):.2e} | {'yes' if bad else 'no'} |")  # fmt: skip
    return rows


def main(quick: bool = False, out: str | None = None, fig: str | None = None) -> None:
    """Print the tables and the targets; write them to ``out`` and the cluster's energy
    errors to the figure ``fig`` when given."""
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    peer = f"jax-md {version('jax-md')}" if rigid_body is not None else "jax-md not installed"
    lines = [
        "## Rigid bodies: mechint against JAX MD" + (" (--quick)" if quick else ""),
        "",
        f"Machine: {platform.platform()}, {cpus} CPUs "
        f"(os.cpu_count() = {os.cpu_count()}); Python {platform.python_version()}, "
        f"mechint {mi.__version__}, jax {jax.__version__} ({jax.default_backend()}), "
        f"{peer}; {now}.  Rates after compilation, in one process, "
        f"best of {1 if quick else REPEAT_FREE} (free bodies) and {1 if quick else 3} "
        "(cluster), the methods of a table timed in turn; float64.",
        "",
    ]
    free_rows, ratio = free_bodies(quick)
    with jax.numpy_dtype_promotion("standard"):  # JAX MD mixes integers and floats
        cluster_rows, first = cluster(quick)
        box_rows = water_box(quick)
    lines += [*free_rows, "", *cluster_rows, *(["", *box_rows] if box_rows else [])]
    block = "\n".join(lines)
    print(block)
    ours = first["mechint RigidBodySplitting()"]
    theirs = next((v for k, v in first.items() if k.startswith("JAX MD")), None)
    versus = (
        f"splitting {ours[0]:.0f} steps/s at energy error {ours[1]:.2e} against JAX MD's "
        f"{theirs[0]:.0f} at {theirs[1]:.2e}"
        if theirs
        else "JAX MD not installed"
    )
    print(
        "\ntargets: LGVI cost <= 2x the Moser–Veselov step ("
        + ", ".join(f"{r:.2f} {p}" for p, r in ratio.items())
        + f"); the splitting at least as fast as JAX MD at equal or smaller energy error "
        f"({versus})"
    )
    if fig:
        figure(fig)
        print(f"figure: {fig}")
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block + "\n")
        print(f"results: {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke)")
    parser.add_argument(
        "--out",
        default=None,
        help="the Markdown results file (default: benchmarks/results/rigid_bodies.md, "
        "not written by --quick)",
    )
    parser.add_argument("--figure", default=None, help="draw the cluster's energy errors here")
    args = parser.parse_args()
    default = None if args.quick else str(ROOT / "benchmarks" / "results" / "rigid_bodies.md")
    main(args.quick, args.out or default, args.figure)
