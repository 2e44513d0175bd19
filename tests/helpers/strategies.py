"""Hypothesis strategies the fuzz tests share."""

from __future__ import annotations

from hypothesis import strategies as st

# Any JSON value, small: what a careless or hostile client may send where a field is expected.
ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
