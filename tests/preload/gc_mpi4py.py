"""The mpi4py habit under the toroid preload: communicators made with Dup and Split, used with
Allreduce, and never freed: the references are dropped (mpi4py frees nothing on garbage
collection), so every one is still alive when mpi4py's exit handler calls MPI_Finalize. Rank 0
alone frees a few hundred small heap blocks between the first two served calls, so its toroid
states sit elsewhere in its heap than the other ranks' do. The job must end: MPI_Finalize
returns on every rank (the caller bounds the run in time)."""
import ctypes
import gc

import numpy as np
from mpi4py import MPI

from preload_counter import served_counter

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
served = served_counter()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(16 + 16 * (i % 3)) for i in range(400)]


def summed(comm):
    """An all-reduce large enough for the shared-memory path, checked."""
    n = 1 << 14
    x = np.arange(n, dtype=np.float64) % 7 + comm.Get_rank()
    out = np.empty_like(x)
    comm.Allreduce(x, out, op=MPI.SUM)
    p = comm.Get_size()
    assert np.array_equal(out, (np.arange(n) % 7) * p + p * (p - 1) // 2), out


comms = [world.Dup(), world.Dup()]
summed(comms[0])
if rank == 0:
    for b in blocks:
        libc.free(b)
summed(comms[1])
comms.append(world.Split(0 if rank < (size + 2) // 3 else 1, size - rank))
comms.append(world.Split(MPI.UNDEFINED if size > 1 and rank == size - 1 else 0, rank))
comms.append(comms[2].Dup())
for c in comms[2:]:
    if c != MPI.COMM_NULL:
        summed(c)
summed(world)

# Dropped in a different order on every rank, some inside a reference cycle the collector
# breaks when it runs (later on rank 0).
cycle = [comms.pop(1)]
cycle.append(cycle)
del cycle
while comms:
    comms.pop(rank % len(comms))
    if rank == 0:
        gc.collect()
gc.collect()
count = served()
world.Barrier()
if rank == 0:
    print(f"communicators left to the garbage collector; toroid served {count} calls on rank 0")
