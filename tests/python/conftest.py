"""Shared by the Python tests, which run under mpirun (every rank runs every test, in the same
order). Assertions go through `agree`, so a failure on one rank fails every rank instead of
leaving the others waiting in the next collective."""
import os
import sys

import pytest
from mpi4py import MPI

import toroid


def agree(ok):
    """True on every rank when `ok` is true on every rank."""
    return MPI.COMM_WORLD.allreduce(1 if ok else 0, op=MPI.MIN) == 1


@pytest.fixture(scope="session")
def comm():
    return toroid.Communicator()


@pytest.fixture(scope="session")
def checked():
    """A communicator that compares arguments across ranks (errors reach every rank)."""
    return toroid.Communicator(check=True)


def pytest_configure(config):
    # Only rank 0 reports; the others stay quiet (their results are agreed anyway).
    if MPI.COMM_WORLD.rank != 0:
        config.option.verbose = -1
        sys.stdout = open(os.devnull, "w")
