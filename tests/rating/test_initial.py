import numpy as np
import pytest

from app.rating import RatingInputError, initial_vectors, stable_hash
from app.rating.initial import _seed_words


def test_stable_hash_is_fixed_across_processes():
    # Fixed value: a change here would re-seed every existing ladder.
    assert stable_hash("alice") == int.from_bytes(
        __import__("hashlib").blake2b(b"alice", digest_size=8).digest(), "little"
    )
    assert stable_hash("alice") != stable_hash("alicf")


def test_initial_vectors_are_reproducible_per_key_and_independent_of_order():
    a = initial_vectors(["x", "y", "z"], k=2, seed=7, scale=0.3)
    b = initial_vectors(["z", "x"], k=2, seed=7, scale=0.3)
    np.testing.assert_array_equal(a[[2, 0]], b)
    c = initial_vectors(["x"], k=2, seed=8, scale=0.3)
    assert not np.array_equal(a[0], c[0])


def test_initial_vectors_have_requested_offset_and_scale():
    keys = [f"p{i}" for i in range(20000)]
    C = initial_vectors(keys, k=1, seed=0, scale=0.5, offset=[0.0, 2.0])
    np.testing.assert_allclose(C.mean(axis=0), [0.0, 2.0], atol=0.02)
    np.testing.assert_allclose(C.std(axis=0), [0.5, 0.5], atol=0.02)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"k": 0}, "k"),
        ({"seed": -1}, "seed"),
        ({"scale": 0.0}, "init_scale"),
        ({"scale": float("inf")}, "init_scale"),
        ({"offset": [1.0]}, "init_offset"),
    ],
)
def test_invalid_initialisation_is_rejected(kwargs, field):
    args = {"k": 1, "seed": 0, "scale": 1.0} | kwargs
    with pytest.raises(RatingInputError) as err:
        initial_vectors(["a"], **args)
    assert err.value.field == field


def numpy_reference(keys, k, seed, scale, offset=None):
    """The definition: row i is offset + scale · default_rng([seed, stable_hash(key)]).standard_normal(2k)."""
    mu = np.zeros(2 * k) if offset is None else np.asarray(offset, dtype=np.float64)
    return np.array(
        [mu + scale * np.random.default_rng([seed, stable_hash(key)]).standard_normal(2 * k) for key in keys]
    )


@pytest.mark.parametrize("seed", [0, 1, 2**31 + 7, 2**32, 2**40 + 3, 2**63 + 5])
@pytest.mark.parametrize("k", [1, 3])
def test_initial_vectors_are_numpys_default_rng_draws_bit_for_bit(seed, k):
    rng = np.random.default_rng(seed % 1000)
    keys = [f"p{n}" for n in rng.integers(0, 10**12, 500)] + ["", "Straße", "a" * 128, "🏓"]
    offset = np.arange(2 * k) / 3
    np.testing.assert_array_equal(
        initial_vectors(keys, k, seed, 0.7, offset), numpy_reference(keys, k, seed, 0.7, offset)
    )
    assert initial_vectors([], k, seed, 0.7).shape == (0, 2 * k)


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 7])
def test_seed_words_are_seedsequences_state_for_any_entropy_length(length):
    # A key whose hash is below 2**32 (one chance in 2**32) seeds with one word fewer, a large seed with more.
    entropy = np.random.default_rng(length).integers(0, 2**32, (50, length), dtype=np.uint64)
    expected = [np.random.SeedSequence(row.tolist()).generate_state(4, np.uint64) for row in entropy]
    np.testing.assert_array_equal(_seed_words(entropy), np.array(expected))
