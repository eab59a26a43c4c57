"""The Python module against the library's tables (toroid/settings.hpp, toroid/algorithm.hpp):
every Options field is a Communicator keyword that reaches the communicator, and the algorithm
names the module knows are the library's."""
import os
import tempfile

from conftest import agree

import toroid

# A value for each Options field, and how a communicator made with it shows it (None: only that
# it is accepted). A field the table gains without a line here fails the first test.
SAMPLES = {
    "topology": ("auto", None),
    "algorithm": ("ring", lambda c: c.algorithm == "ring"),
    "algorithm_rules": ("allreduce:0-inf=ring", None),
    "segment_bytes": (4096, None),
    "check": (True, lambda c: c.checks_arguments),
    "nodes": ("real", None),
    "timeout_seconds": (120.0, None),
    "transport": ("mpi", lambda c: c.transport == "mpi"),
    "progress": ("caller", lambda c: c.progress == "caller"),
    "slot_stores": ("auto", None),
    "trace": (os.path.join(tempfile.gettempdir(), "toroid_test_settings_trace.json"), None),
}


def test_every_options_field_is_a_keyword():
    options = [s["option"] for s in toroid.settings() if s["option"]]
    assert set(options) == set(SAMPLES), "the table's options and this test's samples differ"
    ok = True
    for name in options:
        value, shows = SAMPLES[name]
        c = toroid.Communicator(**{name: value})
        ok &= shows is None or bool(shows(c))
        del c
    trace = SAMPLES["trace"][0]
    for path in (trace, trace + ".2"):
        if os.path.exists(path):
            try:
                os.remove(path)
            except OSError:
                pass  # another rank's
    assert agree(ok)


def test_an_unknown_keyword_names_the_valid_ones():
    try:
        toroid.Communicator(timeout=5)
        raised = ""
    except toroid.InvalidArgument as e:
        raised = str(e)
    assert agree("no keyword 'timeout'" in raised and "timeout_seconds" in raised)


def test_the_variables_are_the_library_s():
    rows = toroid.settings()
    variables = {s["variable"] for s in rows if s["variable"]}
    assert "TOROID_TOPOLOGY" in variables and "TOROID_MIN_BYTES" in variables
    assert all(s["scope"] in ("communicator", "process", "preload") for s in rows)


def test_algorithms_come_from_the_library():
    algos = toroid.algorithms()
    assert "allreduce" in algos["torus2d_both"] and "alltoall" in algos["torus2d_both"]
    assert algos["bruck"] == ["alltoall"]
    assert "mpi" in algos and "auto" in algos
    # Each name is one the library accepts as a communicator's default algorithm.
    ok = True
    for name in algos:
        ok &= toroid.Communicator(algorithm=name).algorithm == name
    assert agree(ok)
