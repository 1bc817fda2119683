"""Options shared by the commands that take a system, an initial state and integrators
(``run``, ``check``, ``compare``): their parser arguments and how they become objects.
Every error names the option."""

from __future__ import annotations

import numpy as np

from mechint.cli import parsing
from mechint.errors import InputError


def add_system_options(p) -> None:
    """--system, its parameters and its initial state."""
    from mechint import systems

    p.add_argument("--system", required=True, help="one of: " + ", ".join(systems.SYSTEMS))
    p.add_argument("--inertia", help="principal moments I1,I2,I3 (euler-top)")
    p.add_argument(
        "--J",
        help="J1,...,Jn > 0 (free-rigid-body, quadratic-potential-top, clebsch; any n >= 2)",
    )
    p.add_argument("--omega", help="frequencies (harmonic-oscillator, one per dof) or ω (pendulum)")
    p.add_argument("--mu", help="gravitational parameter μ > 0 (kepler; default 1)")
    p.add_argument("--lam", help="coupling λ > 0 (henon-heiles; default 1)")
    p.add_argument("--abcd", help="a,b,c,d > 0 of lotka-volterra (default 1,1,1,1)")
    p.add_argument(
        "--x0",
        help="initial state of euler-top and lotka-volterra: comma-separated numbers, rows "
        "separated by ';' for a batch, or a .npy/.json file",
    )
    p.add_argument("--q0", help="initial positions q (canonical systems): comma-separated")
    p.add_argument(
        "--eccentricity", help="kepler: start at periapsis of the orbit with this e (a = 1)"
    )
    matrix = "rows separated by ';' (e.g. 0,1,2;-1,0,3;-2,-3,0), or a .npy/.json file"
    p.add_argument("--M0", help=f"initial skew body momentum M (n x n): {matrix}")
    p.add_argument("--P0", help=f"initial symmetric P (quadratic-potential-top): {matrix}")
    p.add_argument(
        "--p0", help="initial momenta p (canonical systems) or vector p (clebsch): comma-separated"
    )
    p.add_argument("--A", help="potential matrix A (space frame) instead of --P0: P0 = g0ᵀ A g0")
    p.add_argument("--a", help="potential vector a (space frame) instead of --p0: p0 = g0ᵀ a")


def add_integrator_options(p, *, several: bool = False) -> None:
    """--integrator (or --integrators, comma-separated) and their settings."""
    from mechint import integrators

    if several:
        p.add_argument(
            "--integrators",
            required=True,
            help="comma-separated, from: " + ", ".join(integrators.INTEGRATORS),
        )
    else:
        p.add_argument(
            "--integrator", required=True, help="one of: " + ", ".join(integrators.INTEGRATORS)
        )
    p.add_argument("--variant", help="symplectic-euler: A (Marsden Example 1, default) or B")
    p.add_argument(
        "--scheme",
        help="composition: " + ", ".join(integrators.COMPOSITION_SCHEMES) + " (default "
        "yoshida4); splitting: strang (default) or lie-trotter",
    )
    p.add_argument(
        "--base",
        help="composition: the symmetric base method (default stormer-verlet for canonical "
        "systems, splitting otherwise)",
    )
    p.add_argument("--order", help="rigid-body-splitting: 2 (default), 4, 6 or 8")


_MODEL_OPTIONS = {
    "harmonic-oscillator": ("--omega",),
    "pendulum": ("--omega",),
    "kepler": ("--mu",),
    "henon-heiles": ("--lam",),
    "lotka-volterra": ("--abcd",),
}


def build_system(args):
    """The system named by --system with its parameters (errors name the option)."""
    try:
        return _build_system(args)
    except InputError as exc:
        raise InputError(f"--{exc.parameter.lstrip('-')}", exc.problem, exc.fix) from None


def _build_system(args):
    from mechint import systems

    cls = systems.get(args.system)
    for option in ("--omega", "--mu", "--lam", "--abcd"):
        value = getattr(args, option[2:])
        if value is not None and option not in _MODEL_OPTIONS.get(cls.name, ()):
            raise InputError(option, f"does not apply to {cls.name}")
    if cls.name in _MODEL_OPTIONS:
        option = _MODEL_OPTIONS[cls.name][0]
        value = getattr(args, option[2:])
        if value is None:
            return cls()
        numbers = parsing.numbers(option, value)
        if cls is systems.LotkaVolterra:
            if numbers.shape != (4,):
                raise InputError(option, f"expected 4 numbers a,b,c,d, got {value!r}")
            return relabel(option, cls, *numbers)
        return relabel(option, cls, numbers)
    if cls is systems.EulerTop:
        if args.inertia is None:
            raise InputError(
                "--inertia", "required for euler-top", "give I1,I2,I3, e.g. 2,1,0.6667"
            )
        return cls(parsing.numbers("--inertia", args.inertia))
    if args.J is None:
        raise InputError("--J", f"required for {args.system}", "give J1,...,Jn, e.g. 1,2,3")
    return cls(parsing.numbers("--J", args.J))


def _required(option: str, value, system_name: str, fix: str):
    if value is None:
        raise InputError(option, f"required for {system_name}", fix)
    return value


def initial_state(args, system):
    """x0 and g0 (or None) from the options the system needs."""

    from mechint import systems

    if isinstance(system, systems.EulerTop | systems.LotkaVolterra):
        example = "0.45,0,0.89" if isinstance(system, systems.EulerTop) else "2,1"
        text = _required("--x0", args.x0, system.name, f"give the state, e.g. {example}")
        x0, _ = relabel("--x0", system.validate_state, parsing.numbers("--x0", text), "--x0")
        return x0, None
    if hasattr(system, "dof"):
        return _canonical_state(args, system), None
    n = system.n
    g0 = None
    orientation = getattr(args, "orientation", None)
    if orientation is not None:
        g0 = (
            np.eye(n)
            if orientation.strip() == "identity"
            else parsing.numbers("--orientation", orientation)
        )
    example = "0,1,2;-1,0,3;-2,-3,0" if n == 3 else f"an {n}x{n} skew matrix, rows split by ';'"
    M0 = parsing.numbers("--M0", _required("--M0", args.M0, system.name, f"give {example}"))
    if isinstance(system, systems.FreeRigidBody):
        x0, _ = relabel("--M0", system.validate_state, M0, "--M0")
        return x0, g0
    frame = np.eye(n) if g0 is None else g0
    if isinstance(system, systems.QuadraticPotentialTop):
        if args.P0 is None and args.A is not None:
            A = parsing.numbers("--A", args.A)
            if A.shape != (n, n):
                raise InputError("--A", f"expected an {n}x{n} matrix, got shape {A.shape}")
            second = system.body_potential(A, frame)
        else:
            text = _required("--P0", args.P0, system.name, "give --P0 (or --A)")
            second = parsing.numbers("--P0", text)
    else:
        if args.p0 is None and args.a is not None:
            second = system.body_vector(parsing.numbers("--a", args.a), frame)
        else:
            second = parsing.numbers("--p0", _required("--p0", args.p0, system.name, "give --p0"))
    x0, _ = _relabel_state(system, (M0, second))
    return x0, g0


_STATE_OPTIONS = ("x0", "q0", "p0", "eccentricity", "M0", "P0", "A", "a")


def one_state(args, system):
    """The state the options give (one, not a batch), or ``example_state(system)``."""
    if all(getattr(args, k, None) is None for k in _STATE_OPTIONS):
        return example_state(system)
    x0, _ = initial_state(args, system)
    _, batched = system.validate_state(x0)
    if batched:
        raise InputError("--x0", "give one state here, not a batch")
    return x0


def example_state(system):
    """A fixed, generic state of ``system`` (no symmetry, moderate size)."""
    from mechint import exact, systems

    if isinstance(system, systems.EulerTop):
        return np.array([0.45, -0.3, 0.89])
    if isinstance(system, systems.LotkaVolterra):
        return system.equilibrium() * np.array([2.0, 0.5])
    if isinstance(system, systems.Kepler):
        q, p = exact.kepler(system, system.periapsis_state(0.5), 0.9)
        return q, p
    if hasattr(system, "dof"):
        d = system.dof
        return 0.3 * np.cos(np.arange(1, d + 1)), 0.2 * np.sin(np.arange(2, d + 2))
    rng = np.random.default_rng(0)
    n = system.n
    A = 0.5 * rng.standard_normal((n, n))
    M = A - A.T
    if isinstance(system, systems.FreeRigidBody):
        return M
    if isinstance(system, systems.QuadraticPotentialTop):
        B = 0.5 * rng.standard_normal((n, n))
        return M, B + B.T
    return M, rng.standard_normal(n)


def _canonical_state(args, system):
    """(q0, p0) from --q0/--p0, or Kepler's periapsis state from --eccentricity."""
    if args.eccentricity is not None:
        if not isinstance(system, _systems().Kepler):
            raise InputError("--eccentricity", "applies to kepler only")
        if args.q0 is not None or args.p0 is not None:
            raise InputError("--eccentricity", "give either --eccentricity or --q0/--p0")
        e = parsing.numbers("--eccentricity", args.eccentricity)
        return relabel("--eccentricity", system.periapsis_state, e.reshape(()))
    fix = f"give {system.dof} comma-separated numbers" + (
        " (or --eccentricity for kepler)" if isinstance(system, _systems().Kepler) else ""
    )
    q0 = parsing.numbers("--q0", _required("--q0", args.q0, system.name, fix))
    p0 = parsing.numbers("--p0", _required("--p0", args.p0, system.name, fix))
    try:
        x0, _ = system.validate_state((q0, p0), "x0")
    except InputError as exc:
        option = "--q0" if "(q)" in exc.parameter else "--p0" if "(p)" in exc.parameter else "--q0"
        raise InputError(option, exc.problem, exc.fix) from None
    return x0


def _systems():
    from mechint import systems

    return systems


_APPLIES = {
    "--variant": ("symplectic-euler",),
    "--scheme": ("composition", "splitting"),
    "--base": ("composition",),
    "--order": ("rigid-body-splitting",),
}


def integrator_names(args) -> list[str]:
    """The names in --integrator or --integrators, each known, and every integrator
    option used by one of them."""
    from mechint import integrators

    text = getattr(args, "integrators", None) or args.integrator
    names = [n.strip() for n in text.split(",") if n.strip()]
    option = "--integrators" if getattr(args, "integrators", None) else "--integrator"
    if not names:
        raise InputError(option, "names no integrator")
    for name in names:
        relabel(option, integrators.get, name)
    for opt, accepting in _APPLIES.items():
        if getattr(args, opt[2:]) is not None and not any(n in accepting for n in names):
            raise InputError(
                opt, f"does not apply to {', '.join(names)}", f"use it with {accepting[0]}"
            )
    return names


def build_integrator(args, system, name: str | None = None):
    """The integrator ``name`` (default: --integrator) with the options that apply to it."""
    from mechint import integrators

    name = name or integrator_names(args)[0]
    cls = integrators.get(name)
    if cls is integrators.SymplecticEuler:
        return relabel("--variant", cls, args.variant or "A")
    if cls is integrators.RigidBodySplitting:
        order = 2 if args.order is None else parsing.whole("--order", args.order)
        return relabel("--order", cls, order)
    if cls is integrators.Splitting:
        return relabel("--scheme", cls, None, args.scheme or "strang")
    if cls is integrators.Composition:
        default = "stormer-verlet" if hasattr(system, "dof") else "splitting"
        base_name = args.base or default
        if base_name == "composition":
            raise InputError("--base", "cannot be composition itself")
        base = relabel("--base", integrators.get, base_name)()
        schemes = integrators.composition_schemes
        scheme = relabel("--scheme", schemes.get, args.scheme or "yoshida4")
        return relabel("--base", cls, base, scheme)
    return cls()


def _relabel_state(system, x):
    try:
        return system.validate_state(x, "x0")
    except InputError as exc:
        second = "--P0" if "(P)" in exc.parameter else "--p0"
        option = "--M0" if "[0]" in exc.parameter else second
        raise InputError(option, exc.problem, exc.fix) from None


def check_serves(integrator, system, option: str = "--integrator") -> None:
    """``integrator.check(system)``, its error naming the command-line option."""
    relabel(option, integrator.check, system)


def relabel(option, fn, *a):
    try:
        return fn(*a)
    except InputError as exc:
        raise InputError(option, exc.problem, exc.fix) from None
