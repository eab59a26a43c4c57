"""The torch.distributed backend under mpirun: one "toroid" process group per job (and a gloo
group beside it for references), every assertion agreed across ranks."""
import os
import sys

import pytest
from mpi4py import MPI

import torch
import torch.distributed as dist
import toroid.distributed as td


def agree(ok):
    return MPI.COMM_WORLD.allreduce(1 if ok else 0, op=MPI.MIN) == 1


@pytest.fixture(scope="session", autouse=True)
def group():
    torch.set_num_threads(1)
    td.init_process_group("toroid")
    yield
    dist.destroy_process_group()


def pytest_configure(config):
    if MPI.COMM_WORLD.rank != 0:
        config.option.verbose = -1
        sys.stdout = open(os.devnull, "w")
