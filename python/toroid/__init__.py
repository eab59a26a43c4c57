"""toroid: TPU-pod style collectives over MPI, from Python.

Each MPI rank emulates one chip of a 2D torus; collectives run toroid's ring, bidirectional,
2D-torus, hierarchical and latency algorithms on numpy arrays, any writable object with the
buffer protocol, and CPU torch tensors (through DLPack, bfloat16 included), without a copy.

    import numpy as np, toroid
    comm = toroid.Communicator()                  # MPI_COMM_WORLD (mpi4py's, when installed)
    x = np.ones(1 << 20, dtype=np.float32)
    comm.allreduce(x)                             # in place: x = sum over ranks
    shard = comm.reduce_scatter(x)                # block `rank` of the sum (a new array)
    full = comm.allgather(shard)                  # every rank's block, concatenated
    r = comm.iallreduce(x); ...; r.wait()         # non-blocking

Rules (docs/python.md): outputs are written into the caller's memory, so a non-contiguous,
read-only (where written) or non-CPU object is an InvalidArgument, never a silent copy. The GIL
is released while a collective runs. Errors are toroid.Error and its kinds (InvalidArgument,
TopologyError, MpiError) with the C++ message; argument errors reach every rank when the
communicator checks arguments (check=True, TOROID_CHECK=1; the default in debug builds),
as in C++.
"""

import atexit as _atexit

from . import _toroid
from ._toroid import Error, InvalidArgument, MpiError, Request, TopologyError

__version__ = _toroid.__version__
__all__ = ["Communicator", "NumpyShardedOptimizer", "GradientReducer", "Request", "Error", "InvalidArgument",
           "TopologyError", "MpiError", "block_of", "settings", "algorithms"]

_we_initialized_mpi = False


def _handle_of(comm):
    """The Fortran handle of an mpi4py communicator, or of MPI_COMM_WORLD for None."""
    global _we_initialized_mpi
    if comm is None:
        try:
            from mpi4py import MPI  # initializes MPI (thread level multiple) and finalizes it at exit
            return MPI.COMM_WORLD.py2f()
        except ImportError:
            if not _toroid.mpi_initialized():
                _toroid.init_mpi()
                _we_initialized_mpi = True
                _atexit.register(_toroid.finalize_mpi)
            return _toroid.world_handle()
    if not hasattr(comm, "py2f"):
        raise InvalidArgument(f"Communicator: comm is a {type(comm).__name__}, expected an mpi4py communicator or None")
    return comm.py2f()




def settings():
    """The library's table of settings: one dict per setting, with its Options field ("option",
    the Communicator keyword; "" for a variable only), its TOROID_* "variable", its "values",
    "default", "scope" (communicator, process or preload) and whether ranks must agree on it."""
    return _toroid.settings()


def algorithms():
    """{algorithm name: [the collectives it runs]}, as the library has them ("auto" and "mpi"
    included)."""
    return _toroid.algorithms()


def block_of(count, nranks, rank):
    """(offset, count) of block `rank` when `count` elements are cut into `nranks` blocks."""
    return _toroid.block_of(count, nranks, rank)


def _empty_like(x, n):
    """A new 1-D array of n elements of x's dtype and kind (torch tensor or numpy array)."""
    if hasattr(x, "new_empty"):  # torch
        return x.new_empty((n,))
    import numpy
    return numpy.empty(n, dtype=numpy.asarray(x).dtype)


class Communicator:
    """A duplicated MPI communicator with its torus topology (collective to create).

    comm: an mpi4py communicator, or None for MPI_COMM_WORLD (MPI is initialized if needed).
    topology: "auto", "4x2", "16x16x16", "4x2:wrap=x", ...; algorithm: default algorithm name
    (toroid.algorithms() lists them with the collectives each runs); the other settings are those
    of toroid::Options (C++; toroid.settings() lists them), None meaning the TOROID_* environment
    variable or the default.
    """

    def __init__(self, comm=None, **options):
        """`options`: the fields of toroid::Options by name (toroid.settings() lists them:
        topology, algorithm, algorithm_rules, segment_bytes, check, nodes, timeout_seconds,
        transport, progress, slot_stores, trace); one left out or None takes its TOROID_*
        variable, else its default."""
        self._c = _toroid.Communicator(_handle_of(comm), **options)

    rank = property(lambda self: self._c.rank)
    size = property(lambda self: self._c.size)
    topology = property(lambda self: self._c.topology, doc='The torus, e.g. "4x2" or "4x2:wrap=x".')
    dims = property(lambda self: self._c.dims, doc="(x, y) extents of the torus.")
    coord = property(lambda self: self._c.coord, doc="(x, y) of this rank on the torus.")
    wraps = property(lambda self: self._c.wraps, doc="(x, y): whether each axis has wraparound links.")
    nodes = property(lambda self: self._c.nodes, doc="Shared-memory (or emulated) nodes the ranks span.")
    algorithm = property(lambda self: self._c.algorithm)
    transport = property(lambda self: self._c.transport)
    progress = property(lambda self: self._c.progress)
    slot_stores = property(lambda self: self._c.slot_stores,
                           doc='How this node\'s senders started writing shared-memory slots: "cached" or '
                               '"streaming" ("auto": no shared-memory peers).')
    checks_arguments = property(lambda self: self._c.checks_arguments)

    def allocate(self, shape, dtype="float32"):
        """A zero-filled numpy array in the node's shared memory (collective: every rank calls it;
        shapes may differ). A collective whose input and output are such arrays on every rank, with
        algorithm auto on a communicator all on one node, works on the ranks' arrays directly
        (single-copy, docs/transport.md). The memory lives as long as any view of the array does;
        torch.from_numpy(a) shares it."""
        import numpy
        dt = numpy.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = 1
        for extent in shape:
            count *= int(extent)
        return self._c.allocate_bytes(count * dt.itemsize).view(dt).reshape(shape)

    single_copy_calls = property(lambda self: self._c.single_copy_calls,
                                 doc="Collectives this rank ran single-copy so far (a diagnostic).")

    # ---- outputs
    def _block_out(self, x, out, axis=None):
        if out is not None:
            return out
        count, _ = _toroid.element_count(x)
        if axis is None:
            n, r = self.size, self.rank
        else:
            members, r = self._c.group_along(axis)
            n = len(members)
        return _empty_like(x, block_of(count, n, r)[1])

    def _gather_out(self, x, out, axis=None):
        if out is not None:
            return out
        count, _ = _toroid.element_count(x)
        if axis is None:
            return _empty_like(x, self._c.sum_counts(count))
        import numpy
        total = numpy.array([count], dtype=numpy.int64)
        self._c.allreduce_axis(total, None, "sum", axis, None)
        return _empty_like(x, int(total[0]))

    # ---- blocking
    def allreduce(self, x, op="sum", out=None, algorithm=None):
        """out = op over ranks of x (in place in x when out is None); returns out."""
        self._c.allreduce(x, out, op, algorithm)
        return x if out is None else out

    def reduce_scatter(self, x, op="sum", out=None, algorithm=None):
        """out = block `rank` of (op over ranks of x); a new array when out is None."""
        out = self._block_out(x, out)
        self._c.reduce_scatter(x, out, op, algorithm)
        return out

    def allgather(self, x, out=None, algorithm=None):
        """out = every rank's x concatenated in rank order (x is block `rank` of out)."""
        out = self._gather_out(x, out)
        self._c.allgather(x, out, algorithm)
        return out

    def group_along(self, axis):
        """(members, position): the ranks of this rank's sub-torus along `axis` (one axis "x",
        or several: "xz", ("x", "z"), (0, 2)) in its order, and this rank's place among them,
        which is its block index in the reduce-scatter and all-gather along `axis`."""
        return self._c.group_along(axis)

    def allreduce_axis(self, x, axis, op="sum", out=None, algorithm=None):
        """All-reduce in the sub-torus along `axis` through this rank: its row (axis "x"), its
        column ("y"), its xz-plane ("xz" or ("x", "z")), ...; every such group at once."""
        self._c.allreduce_axis(x, out, op, axis, algorithm)
        return x if out is None else out

    def reduce_scatter_axis(self, x, axis, op="sum", out=None, algorithm=None):
        out = self._block_out(x, out, axis)
        self._c.reduce_scatter_axis(x, out, op, axis, algorithm)
        return out

    def allgather_axis(self, x, axis, out=None, algorithm=None):
        out = self._gather_out(x, out, axis)
        self._c.allgather_axis(x, out, axis, algorithm)
        return out

    def alltoall_axis(self, x, axis, out=None, algorithm=None):
        """All-to-all among the group along `axis` (group_along(axis), in block order): x in one
        equal block per member, block j to member j; out's block i from member i."""
        out = self._exchange_out(x, out)
        self._c.alltoall_axis(x, out, axis, algorithm)
        return out

    def broadcast(self, x, root=0, algorithm=None):
        """x of rank `root` into x on every rank; returns x."""
        self._c.broadcast(x, root, algorithm)
        return x

    # ---- non-blocking: Request.wait() returns the output
    def iallreduce(self, x, op="sum", out=None, algorithm=None):
        return self._c.iallreduce(x, out, op, algorithm)

    def ireduce_scatter(self, x, op="sum", out=None, algorithm=None):
        return self._c.ireduce_scatter(x, self._block_out(x, out), op, algorithm)

    def iallgather(self, x, out=None, algorithm=None):
        return self._c.iallgather(x, self._gather_out(x, out), algorithm)

    def alltoall(self, x, out=None, algorithm=None):
        """x in `size` equal blocks, block j to rank j; out block i is rank i's block for this
        rank (MPI_Alltoall's layout). A new array when out is None; never in place."""
        out = self._exchange_out(x, out)
        self._c.alltoall(x, out, algorithm)
        return out

    def ialltoall(self, x, out=None, algorithm=None):
        return self._c.ialltoall(x, self._exchange_out(x, out), algorithm)

    def alltoallv(self, x, send_counts, recv_counts, out=None, send_offsets=None,
                  recv_offsets=None, algorithm=None):
        """Blocks of each rank's own sizes (MPI_Alltoallv): send_counts[j] elements of x (from
        send_offsets[j], or packed in rank order) go to rank j, and recv_counts[i] elements from
        rank i land in out (at recv_offsets[i], or packed). Rank i's send count to j must equal
        j's receive count from i: where they differ, j raises naming both. out: a new array
        when None (as long as the receive blocks need); never in place."""
        out = self._exchange_v_out(x, out, recv_counts, recv_offsets)
        self._c.alltoallv(x, out, send_counts, recv_counts, send_offsets, recv_offsets,
                          algorithm)
        return out

    def ialltoallv(self, x, send_counts, recv_counts, out=None, send_offsets=None,
                   recv_offsets=None, algorithm=None):
        out = self._exchange_v_out(x, out, recv_counts, recv_offsets)
        return self._c.ialltoallv(x, out, send_counts, recv_counts, send_offsets, recv_offsets,
                                  algorithm)

    def _exchange_v_out(self, x, out, recv_counts, recv_offsets):
        if out is not None:
            return out
        counts = [int(c) for c in recv_counts]
        if recv_offsets is None:
            return _empty_like(x, sum(counts))
        ends = [int(o) + c for o, c in zip(recv_offsets, counts)]
        return _empty_like(x, max(ends, default=0))

    def _exchange_out(self, x, out):
        if out is not None:
            return out
        count, _ = _toroid.element_count(x)
        return _empty_like(x, count)

    def ibroadcast(self, x, root=0, algorithm=None):
        return self._c.ibroadcast(x, root, algorithm)


class NumpyShardedOptimizer:
    """Weight-update sharding on numpy arrays (docs/optimizer.md): reduce-scatter the gradients,
    update this rank's shard, all-gather the weights. The C++ ShardedOptimizer, with its names;
    for torch models, toroid.optim.ShardedOptimizer (a torch.optim.Optimizer built on this one).

    params: a list of (name, weights, grads): float32 weights updated in place, float32 or
    bfloat16 gradients, contiguous, alive as long as the optimizer. Settings are the C++
    OptimizerConfig fields as keywords: kind ("sgd", "adam", "adamw", "lamb", "lars"),
    learning_rate, schedule (callable(step, base) -> lr), momentum, nesterov, beta1, beta2,
    epsilon, weight_decay, no_weight_decay, no_trust_ratio, lars_trust_coefficient,
    max_grad_norm, shard, bf16_gradients, average, bucket_bytes, first_bucket_bytes,
    rebuild_buckets. ready(name) during the backward pass overlaps the reduce-scatters with it
    (docs/overlap.md); step() returns a dict of what the step did and how long it took.
    """

    def __init__(self, comm, params, **settings):
        self._params = list(params)  # the arrays stay referenced
        self._o = _toroid.ShardedOptimizer(comm._c, self._params, **settings)

    def step(self):
        return self._o.step()

    def ready(self, name_or_index):
        self._o.ready(name_or_index)

    def poll(self):
        self._o.poll()

    def save(self, path):
        """Collective: every rank writes its part of one file (on a file system all ranks see),
        all or nothing (`path.saving`, synced, renamed over `path`)."""
        self._o.save(str(path))

    def load(self, path):
        """Collective: verifies every section's checksum, then sets the weights and state; a
        damaged file is an Error naming the section, and nothing is changed."""
        self._o.load(str(path))

    def buckets(self):
        return self._o.buckets()

    def state(self):
        """Collective: {"steps": n, "arrays": {name: float32 array}}, each array every
        tensor's state end to end in registration order: the same on every rank and at any
        rank count (names: "momentum" for sgd and lars, "exp_avg" and "exp_avg_sq" for the
        Adam family)."""
        return self._o.state()

    def set_state(self, steps, arrays):
        """Collective: the state from state()'s form, taken at any rank count or layout."""
        self._o.set_state(int(steps), dict(arrays))

    steps_taken = property(lambda self: self._o.steps_taken)
    state_bytes = property(lambda self: self._o.state_bytes)
    shard_elements = property(lambda self: self._o.shard_elements)
    trust_ratios = property(lambda self: self._o.trust_ratios)


class GradientReducer:
    """DDP-style gradient summation overlapped with the backward pass (docs/overlap.md).

    grads: a list of (name, array) of float32 or bfloat16, summed (averaged) in place by
    finish(). Settings: bucket_bytes, first_bucket_bytes, bf16, average, rebuild_buckets,
    algorithm.
    """

    def __init__(self, comm, grads, **settings):
        self._grads = list(grads)
        self._r = _toroid.GradientReducer(comm._c, self._grads, **settings)

    def ready(self, name_or_index):
        self._r.ready(name_or_index)

    def poll(self):
        self._r.poll()

    def finish(self):
        self._r.finish()

    def buckets(self):
        return self._r.buckets()
