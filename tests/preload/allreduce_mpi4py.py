"""comm.Allreduce, comm.Bcast, comm.Iallreduce and comm.Ibcast on numpy arrays under the toroid
preload (mpi4py initializes MPI with MPI_THREAD_MULTIPLE, so the non-blocking ones are served
too): every result checked,
and toroid seen to serve the large calls and to leave the small ones to MPI (the counter the
preload exports; the caller also checks the TOROID_LOG=info line)."""
import numpy as np
from mpi4py import MPI

from preload_counter import served_counter

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
served = served_counter()
before = served()

n = 1 << 16
x = (np.arange(n) % 100 + rank).astype(np.float32)
out = np.empty_like(x)
comm.Allreduce(x, out, op=MPI.SUM)
assert np.array_equal(out, ((np.arange(n) % 100) * size + size * (size - 1) // 2).astype(np.float32)), out

y = np.full(n, float(rank))
comm.Allreduce(MPI.IN_PLACE, y, op=MPI.MAX)
assert (y == size - 1).all(), y

z = np.arange(n, dtype=np.int64) - rank
comm.Allreduce(MPI.IN_PLACE, z, op=MPI.MIN)
assert np.array_equal(z, np.arange(n, dtype=np.int64) - (size - 1)), z

w = np.full(n, 2 if rank == 0 else 1, dtype=np.int32)
comm.Allreduce(MPI.IN_PLACE, w, op=MPI.PROD)
assert (w == 2).all(), w

small = np.ones(4)
comm.Allreduce(MPI.IN_PLACE, small, op=MPI.SUM)
assert (small == size).all(), small

weights = np.arange(n, dtype=np.float32) * 0.5 if rank == size - 1 else np.zeros(n, dtype=np.float32)
comm.Bcast(weights, root=size - 1)  # the initial weight sync
assert np.array_equal(weights, np.arange(n, dtype=np.float32) * 0.5), weights

flag = np.array([7 if rank == 0 else 0], dtype=np.int32)
comm.Bcast(flag, root=0)
assert flag[0] == 7, flag

# Non-blocking, overlapped with work, completed with Wait, Waitall and Test.
a = (np.arange(n) % 7 + rank).astype(np.float64)
req = comm.Iallreduce(MPI.IN_PLACE, a, op=MPI.SUM)
busy = float(np.sum(np.sqrt(np.arange(1 << 18, dtype=np.float64))))  # work while it runs
req.Wait()
assert np.array_equal(a, ((np.arange(n) % 7) * size + size * (size - 1) // 2).astype(np.float64)), a
b = np.full(n, 5.0 if rank == 0 else -1.0, dtype=np.float32)
c = np.arange(n, dtype=np.int32) * (rank + 1)
token = np.array([rank], dtype=np.int32)
got = np.empty(1, dtype=np.int32)
reqs = [comm.Ibcast(b, root=0), comm.Irecv(got, source=(rank - 1) % size, tag=3),
        comm.Iallreduce(MPI.IN_PLACE, c, op=MPI.MAX), comm.Isend(token, dest=(rank + 1) % size, tag=3)]
MPI.Request.Waitall(reqs)
assert (b == 5.0).all() and np.array_equal(c, np.arange(n, dtype=np.int32) * size), (b, c)
assert got[0] == (rank - 1) % size, got
d = np.ones(n, dtype=np.float32)
req = comm.Iallreduce(MPI.IN_PLACE, d, op=MPI.SUM)
while not req.Test():
    pass
assert (d == size).all(), d

count = served() - before
assert count == 9, f"toroid served {count} calls, expected the 9 large ones"
if rank == 0:
    print(f"mpi4py {MPI.get_vendor()[0]}: 5 Allreduce, 2 Bcast, 3 Iallreduce and 1 Ibcast calls correct, "
          f"toroid served {count} (busy {busy:.0f})")
