"""ImageArray's spacing and origin follow the array (issue 23, bug 4): a sub-volume written with write_image lands where
it was, a transposed array keeps each axis's spacing, a pickle keeps them, and a reduction is a number."""
import copy
import pickle

import numpy as np
import pytest

import glrecon

SPACING = (0.5, 2.0, 3.0)  # x, y, z: all different, so that a swap shows
ORIGIN = (-10.0, 20.0, 100.0)


def volume():
    # (z, y, x) = (6, 5, 4): all different, so that a wrong axis shows.
    return glrecon.ImageArray(np.arange(120, dtype=np.float32).reshape(6, 5, 4), SPACING, ORIGIN)


def centre(image, index):
    """World position (x, y, z) of element ``index`` (array order) of an image, from its own spacing and origin."""
    return tuple(o + i * s for o, i, s in zip(image.origin, index[::-1], image.spacing))


def test_slicing_moves_the_origin_to_the_new_first_element():
    v = volume()
    part = v[2:, 1:4, 3]
    # Element 0 of the part is element (2, 1, 3) of the whole: the same point in the world. The cut x axis stays as the
    # third number (its position).
    assert part.shape == (4, 3)
    assert part.origin == (ORIGIN[1] + 1 * SPACING[1], ORIGIN[2] + 2 * SPACING[2], ORIGIN[0] + 3 * SPACING[0])
    assert part.spacing == (SPACING[1], SPACING[2], SPACING[0])
    sub = v[2:5, ::2, -3:]
    for index in np.ndindex(sub.shape):
        whole = (2 + index[0], 2 * index[1], 1 + index[2])
        np.testing.assert_allclose(centre(sub, index), centre(v, whole), rtol=0, atol=0)
        assert sub[index] == v[whole]
    assert v[...].origin == v.origin and v[..., 1:].origin == (ORIGIN[0] + SPACING[0],) + ORIGIN[1:]


def test_a_written_sub_volume_lands_where_it_was(tmp_path):
    v = volume()
    glrecon.write_image(tmp_path / "part.mha", v[3:])
    back = glrecon.read_image(tmp_path / "part.mha")
    assert back.origin == (ORIGIN[0], ORIGIN[1], ORIGIN[2] + 3 * SPACING[2])  # 8 slices further in the words
    np.testing.assert_array_equal(back, v[3:])
    glrecon.write_image(tmp_path / "slice.mha", v[4])  # one slice: its z position is the third number
    assert glrecon.read_image(tmp_path / "slice.mha").origin == (ORIGIN[0], ORIGIN[1], ORIGIN[2] + 4 * SPACING[2])
    with pytest.raises(glrecon.InputError, match="spacing"):
        glrecon.write_image(tmp_path / "mirror.mha", v[::-1])  # a mirrored axis: no MetaImage says it
    assert v[::-1].spacing[2] == -SPACING[2] and v[::-1].origin[2] == ORIGIN[2] + 5 * SPACING[2]


@pytest.mark.parametrize("make", [lambda v: v.T, lambda v: v.transpose(), lambda v: v.transpose(1, 0, 2),
                                  lambda v: v.transpose((2, 0, 1)), lambda v: np.transpose(v, (0, 2, 1)),
                                  lambda v: v.swapaxes(0, 2), lambda v: np.moveaxis(v, 0, -1)])
def test_transposing_permutes_spacing_and_origin(make):
    v = volume()
    t = make(v)
    # Find where v's element (1, 2, 3) went; along each axis of t it lies where it lay along the same axis of v (the
    # axes are told apart by their lengths, all different). Positions per array axis: entry ndim - 1 - axis.
    where = tuple(int(i[0]) for i in np.nonzero(t == v[1, 2, 3]))
    for axis in range(3):
        came_from = v.shape.index(t.shape[axis])
        assert t.spacing[2 - axis] == v.spacing[2 - came_from]
        assert t.origin[2 - axis] + where[axis] * t.spacing[2 - axis] == v.origin[2 - came_from] + (1, 2, 3)[came_from] * v.spacing[2 - came_from]


def test_pickle_and_copies_keep_spacing_and_origin():
    v = volume()[1:]
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(v, protocol=protocol))
        assert isinstance(back, glrecon.ImageArray)
        assert back.spacing == v.spacing and back.origin == v.origin, protocol
        np.testing.assert_array_equal(back, v)
    assert copy.deepcopy(v).origin == v.origin and v.copy().spacing == v.spacing


def test_reductions_are_numbers_and_reshaped_results_plain():
    v = volume()
    for value in (v.max(), v.min(), v.sum(), v.mean(), np.max(v), v[0].std()):
        assert not isinstance(value, np.ndarray), type(value)
        assert isinstance(value, (float, np.floating)), type(value)
    assert f"{v.max():.1f}" == "119.0"
    assert type(v.sum(axis=0)) is np.ndarray  # a (y, x) sum over z is no slice of the grid
    assert type(v[v > 3]) is np.ndarray and type(v[[0, 2]]) is np.ndarray and type(v[None]) is np.ndarray
    same = v * 2 + 1  # element-wise: the same grid
    assert isinstance(same, glrecon.ImageArray) and same.origin == v.origin and same.spacing == v.spacing
