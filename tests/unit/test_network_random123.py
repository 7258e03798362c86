"""NEURON's Random123 streams: Philox4x32-10 against the published known answers, and the
stream rules (word order, uint32 -> double, discunif). NEURON's own draws are compared in
``tests/validation/test_neuron_ringtest.py``."""
import math

import pytest

from hinesbatch.network.random123 import Random123Stream, philox4x32_10

M = 0xFFFFFFFF


@pytest.mark.parametrize("counter, key, want", [
    # Random123's kat_vectors for philox4x32 with 10 rounds
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M, M, M, M), (M, M), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_gives_the_known_answers(counter, key, want):
    assert philox4x32_10(counter, key) == want


def test_a_stream_hands_out_blocks_of_counter_seq_id3_id1_id2():
    s = Random123Stream(5, 7, 9, global_index=3)
    got = [s.uint32() for _ in range(12)]
    want = [w for seq in range(3) for w in philox4x32_10((seq, 9, 5, 7), (3, 0))]
    assert got == want


def test_uniform01_is_u_plus_1_over_2_to_32_plus_1():
    s, raw = Random123Stream(1, 2), Random123Stream(1, 2)
    for _ in range(9):
        assert s.uniform01() == (raw.uint32() + 1.0) * (1.0 / 4294967297.0)


def test_discunif_and_repick_stay_in_range_and_follow_the_formula():
    s, raw = Random123Stream(3, 4), Random123Stream(3, 4)
    first = s.discunif(10, 20)
    assert first == math.floor(10 + 11.0 * raw.uniform01())
    picks = [s.repick() for _ in range(500)]
    assert set(picks) == set(range(10, 21))   # every value reached, none outside


def test_bad_streams_and_distributions_are_refused():
    with pytest.raises(ValueError, match="id1 must be an integer in 0 .. 2\\*\\*32 - 1"):
        Random123Stream(-1)
    with pytest.raises(ValueError, match="low <= high"):
        Random123Stream(0).discunif(3, 2)
    with pytest.raises(RuntimeError, match="repick before any distribution"):
        Random123Stream(0).repick()
