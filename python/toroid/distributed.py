"""toroid as a torch.distributed backend: `import toroid.distributed` registers "toroid".

    import torch, toroid.distributed
    toroid.distributed.init_process_group()          # under mpirun: rank, size, rendezvous from MPI
    model = torch.nn.parallel.DistributedDataParallel(model)
    torch.distributed.all_reduce(t)                  # toroid's all-reduce

Served by toroid: all_reduce (SUM, AVG, PRODUCT, MIN, MAX), all_reduce_coalesced, reduce (an
all-reduce kept on the root), reduce_scatter and _reduce_scatter_base, all_gather,
all_gather_coalesced and _all_gather_base, broadcast, barrier, on contiguous CPU tensors of
float32, float64, bfloat16, float16, int32, int64; each returns a Work whose future DDP chains
on; a synchronous call runs on the caller's thread. On MPI, any dtype: broadcast and all-gather
of the other dtypes, gather, scatter, all_to_all, all_to_all_single (and so the object
collectives), send/recv and isend/irecv, recv from any source. A sub-group that is a row or
column of the world's torus runs on it (group.topology). Anything else raises an error naming the operation. The backend serves the world
group of an mpirun job and its sub-groups (dist.new_group(ranks, backend="toroid"): an MPI
communicator of the members), each process one MPI rank. torch 1.13 (docs/torch.md).
"""
import socket

from mpi4py import MPI  # MPI with MPI_THREAD_MULTIPLE: the backend completes works on its own thread

import torch.distributed as dist

try:
    from . import _toroid_c10d
except ImportError as e:  # built without TOROID_BUILD_TORCH, or against another torch
    raise ImportError(f"toroid.distributed: the torch backend is not available ({e}); it is built with "
                      "TOROID_BUILD_TORCH=ON against torch 1.13 (Debian's libtorch-dev)") from e

__all__ = ["init_process_group", "ProcessGroupToroid"]
ProcessGroupToroid = _toroid_c10d.ProcessGroupToroid


def _create(store, rank, size, timeout):
    return ProcessGroupToroid(store, rank, size)


if "TOROID" not in dist.Backend._plugins:
    dist.Backend.register_backend("toroid", _create)


def init_process_group(backend="toroid", **kwargs):
    """torch.distributed.init_process_group with rank, world size and a TCP rendezvous taken
    from the MPI job (rank 0's host and a free port there), unless given. `backend` may be
    "gloo" too, for comparisons under the same launcher."""
    world = MPI.COMM_WORLD
    kwargs.setdefault("rank", world.rank)
    kwargs.setdefault("world_size", world.size)
    if "init_method" not in kwargs and "store" not in kwargs:
        address = None
        if world.rank == 0:
            with socket.socket() as s:
                s.bind(("", 0))
                address = (socket.gethostname(), s.getsockname()[1])
        host, port = world.bcast(address, root=0)
        kwargs["init_method"] = f"tcp://{host}:{port}"
    dist.init_process_group(backend, **kwargs)
