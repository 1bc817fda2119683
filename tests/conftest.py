import jax
import numpy as np
import pytest

import mechint as mi

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")

INERTIAS = {
    "distinct": (2.0, 1.0, 2.0 / 3.0),
    "reversed": (0.5, 1.5, 3.0),
    "two-equal": (2.0, 1.0, 1.0),
}


@pytest.fixture
def top():
    return mi.systems.EulerTop(INERTIAS["distinct"])


@pytest.fixture
def m0():
    return np.array([0.45, 0.0, 0.89])
