"""Weight-update sharding as a torch optimizer: `toroid.optim.ShardedOptimizer`.

    import toroid.optim
    opt = toroid.optim.ShardedOptimizer(model.named_parameters(), "lamb", lr=1e-3,
                                        weight_decay=0.01, no_weight_decay=["bias"],
                                        bf16_gradients=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()   # each gradient's bucket reduce-scatters as it is ready
        opt.step()                        # update this rank's shard, all-gather the weights
        sched.step()

Every rank holds the whole model and computes gradients on its own data, as under DDP (do not
wrap the model in DDP as well: the optimizer sums the gradients). step() reduce-scatters the
gradients (optionally in bfloat16), updates only this rank's shard of the weights with only its
shard of the optimizer state (SGD, Adam, AdamW, LAMB, LARS: toroid's fused rules,
docs/optimizer.md), and all-gathers the weights, so every parameter is replicated and updated
after step(). The reduce-scatters start during backward: a hook on each parameter's gradient
accumulator hands the gradient over as soon as autograd has accumulated it, and a bucket's
collective starts when its last gradient arrives (as DDP's reducer does).

Rules (docs/torch.md):
- parameters are float32, CPU, contiguous leaves; their .data keeps its storage (the optimizer
  writes the weights there);
- gradients live in buffers the optimizer made (p.grad): zero_grad() zeroes them in place. A
  gradient that autograd put in a new tensor (after p.grad = None) is copied into the buffer;
- gradient accumulation over several backward passes runs under `with opt.no_sync():` for all
  but the last (otherwise the first pass's gradients would be sent; that is an error);
- each param group is one toroid optimizer (its own buckets); lr is read from the group every
  step (lr schedulers work), the other hyper-parameters are fixed at construction;
- state_dict() is collective and holds the whole state in torch's layout ({"state": {index:
  {"step", "exp_avg", "exp_avg_sq" | "momentum"}}, "param_groups": [...]}), the same at any rank
  count: a checkpoint taken at one rank count loads at another.
"""
import contextlib

import numpy as np
import torch

import toroid

__all__ = ["ShardedOptimizer"]

_KINDS = ("sgd", "adam", "adamw", "lamb", "lars")
# The C++ OptimizerConfig's defaults (toroid/optimizer.hpp), which the signature below uses: each
# default is written once, in C++ (tests/torch/test_optim.py checks the signature against them).
_DEFAULTS = toroid._toroid.optimizer_defaults()

# Hyper-parameters a param group may set besides lr (read every step), fixed at construction.
_FIXED_KEYS = ["betas", "eps", "weight_decay", "momentum", "nesterov", "trust_coefficient"]


def _split_names(params):
    """The parameters as torch wants them (tensors or groups of tensors) and a name per
    parameter: from (name, tensor) pairs (named_parameters()), else "group.index"."""
    params = list(params)
    if not params:
        raise ValueError("ShardedOptimizer: the parameter list is empty")
    names = {}
    groups = params if isinstance(params[0], dict) else [{"params": params}]
    out = []
    for gi, g in enumerate(groups):
        if not isinstance(g, dict):
            raise TypeError(f"ShardedOptimizer: param group {gi} is a {type(g).__name__}; give tensors, "
                            "(name, tensor) pairs or dicts of them")
        tensors = []
        for pi, p in enumerate(g["params"] if not isinstance(g["params"], torch.Tensor) else [g["params"]]):
            if isinstance(p, (tuple, list)) and len(p) == 2 and isinstance(p[1], torch.Tensor):
                name, p = p
            else:
                name = f"{gi}.{pi}"
            names[id(p)] = str(name)
            tensors.append(p)
        out.append({**g, "params": tensors})
    return out, names


class ShardedOptimizer(torch.optim.Optimizer):
    """torch.optim.Optimizer over toroid's weight-update sharding (module docstring).

    params: model.parameters(), model.named_parameters() (names for no_weight_decay and
    no_trust_ratio patterns and for errors), or param groups of either. kind: "sgd", "adam",
    "adamw", "lamb" or "lars". Per group: lr, betas, eps, weight_decay, momentum, nesterov,
    trust_coefficient. For the whole optimizer: max_grad_norm (global L2 clipping; one group
    only), bf16_gradients (sum gradients in bfloat16), shard (False: the replicated baseline),
    average (mean over ranks, as DDP), overlap (start reduce-scatters from autograd),
    no_weight_decay / no_trust_ratio (name patterns), bucket_bytes, first_bucket_bytes,
    rebuild_buckets, comm (a toroid.Communicator or mpi4py communicator; default the world).
    """

    def __init__(self, params, kind=_DEFAULTS["kind"], lr=_DEFAULTS["learning_rate"], *,
                 betas=(_DEFAULTS["beta1"], _DEFAULTS["beta2"]), eps=_DEFAULTS["epsilon"],
                 weight_decay=_DEFAULTS["weight_decay"], momentum=_DEFAULTS["momentum"],
                 nesterov=_DEFAULTS["nesterov"], trust_coefficient=_DEFAULTS["lars_trust_coefficient"],
                 max_grad_norm=_DEFAULTS["max_grad_norm"], bf16_gradients=_DEFAULTS["bf16_gradients"],
                 shard=_DEFAULTS["shard"], average=_DEFAULTS["average"], overlap=True, no_weight_decay=(),
                 no_trust_ratio=(), bucket_bytes=_DEFAULTS["bucket_bytes"],
                 first_bucket_bytes=_DEFAULTS["first_bucket_bytes"],
                 rebuild_buckets=_DEFAULTS["rebuild_buckets"], comm=None):
        if kind not in _KINDS:
            raise ValueError(f"ShardedOptimizer: kind is '{kind}', expected one of {', '.join(_KINDS)}")
        groups, self._names = _split_names(params)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum=momentum,
                        nesterov=nesterov, trust_coefficient=trust_coefficient)
        super().__init__(groups, defaults)
        if max_grad_norm > 0 and len(self.param_groups) > 1:
            raise ValueError("ShardedOptimizer: max_grad_norm clips the norm over all parameters, which needs "
                             f"one param group (there are {len(self.param_groups)})")
        if comm is None or not isinstance(comm, toroid.Communicator):
            comm = toroid.Communicator(comm)
        self.comm = comm
        self.kind = kind
        self._overlap = bool(overlap)
        self._syncing = True
        self._settings = dict(kind=kind, max_grad_norm=float(max_grad_norm), bf16_gradients=bool(bf16_gradients),
                              shard=bool(shard), average=bool(average), no_weight_decay=list(no_weight_decay),
                              no_trust_ratio=list(no_trust_ratio), bucket_bytes=int(bucket_bytes),
                              first_bucket_bytes=int(first_bucket_bytes), rebuild_buckets=bool(rebuild_buckets))
        self._grads = []      # per group, per parameter: the gradient buffer (p.grad)
        self._ready = []      # per group: indices handed over in this step
        self._fixed = []      # per group: the fixed hyper-parameters it was built with
        self._opts = []
        self._hooks = []      # gradient accumulators (kept alive) and their hook handles
        for gi, g in enumerate(self.param_groups):
            entries, grads = [], []
            for p in g["params"]:
                name = self._names.get(id(p), "?")
                self._check_param(p, name)
                if p.grad is None:
                    p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
                elif not (p.grad.dtype == torch.float32 and p.grad.is_contiguous() and p.grad.shape == p.shape):
                    p.grad = p.grad.detach().to(torch.float32).contiguous().clone()
                grads.append(p.grad)
                entries.append((name, p.detach(), p.grad))
            self._grads.append(grads)
            self._ready.append(set())
            self._fixed.append({k: g[k] for k in _FIXED_KEYS})
            self._opts.append(toroid.NumpyShardedOptimizer(comm, entries, **self._group_settings(g)))
        if self._overlap:
            with torch.enable_grad():  # the graph node exists only with grad mode on
                for gi, g in enumerate(self.param_groups):
                    for i, p in enumerate(g["params"]):
                        acc = p.expand_as(p).grad_fn.next_functions[0][0]  # p's AccumulateGrad
                        handle = acc.register_hook(self._make_hook(gi, i))
                        self._hooks.append((acc, handle))
        self._built = True

    # ---- torch.optim.Optimizer

    def add_param_group(self, param_group):
        """Only while constructing: each group is a toroid optimizer made collectively then."""
        if getattr(self, "_built", False):
            raise ValueError("ShardedOptimizer: param groups are fixed at construction (each is a toroid "
                             "optimizer built by every rank together); pass them all to the constructor")
        super().add_param_group(param_group)

    @torch.no_grad()
    def step(self, closure=None):
        """Collective: reduce-scatter what autograd has not already handed over, update this
        rank's shards, all-gather the weights. Returns the closure's loss, if any; the last
        step's reports (phase times, gradient norm) are in `last_reports`."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        reports = []
        for gi, (g, opt) in enumerate(zip(self.param_groups, self._opts)):
            self._check_fixed(gi, g)
            ready = self._ready[gi]
            for i, p in enumerate(g["params"]):
                if i not in ready:
                    self._adopt_grad(gi, i, p)
                    if ready:  # some were handed over during backward: hand over the rest
                        opt.ready(i)
            reports.append(opt.step())
            ready.clear()
        self.last_reports = reports
        return loss

    def zero_grad(self, set_to_none=False):
        """Zeroes the gradient buffers in place (set_to_none is accepted and ignored: the
        buffers are the optimizer's)."""
        for gi, g in enumerate(self.param_groups):
            for i, p in enumerate(g["params"]):
                buf = self._grads[gi][i]
                buf.zero_()
                if p.grad is not buf:
                    p.grad = buf

    def state_dict(self):
        """Collective: the whole state in torch's layout, the same at any rank count."""
        state, index, groups = {}, 0, []
        for g, opt in zip(self.param_groups, self._opts):
            whole = opt.state()
            at, indices = 0, []
            for p in g["params"]:
                n = p.numel()
                entry = {"step": torch.tensor(float(whole["steps"]))}
                for name, array in whole["arrays"].items():
                    entry[name] = torch.from_numpy(np.array(array[at:at + n])).view_as(p)
                state[index] = entry
                indices.append(index)
                index, at = index + 1, at + n
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": indices})
        return {"state": state, "param_groups": groups, "kind": self.kind}

    def load_state_dict(self, state_dict):
        """Collective: sets every group's lr and the optimizer state from state_dict() taken at
        any rank count (the weights are the model's: model.load_state_dict)."""
        kind = state_dict.get("kind", self.kind)
        if kind != self.kind:
            raise ValueError(f"ShardedOptimizer.load_state_dict: the state is {kind}'s, this optimizer is {self.kind}")
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError(f"ShardedOptimizer.load_state_dict: {len(saved)} param groups, this optimizer has "
                             f"{len(self.param_groups)}")
        for gi, (s, g) in enumerate(zip(saved, self.param_groups)):
            if len(s["params"]) != len(g["params"]):
                raise ValueError(f"ShardedOptimizer.load_state_dict: group {gi} has {len(s['params'])} parameters, "
                                 f"this optimizer's {len(g['params'])}")
            for k in _FIXED_KEYS:
                if k in s and _differs(s[k], self._fixed[gi][k]):
                    raise ValueError(f"ShardedOptimizer.load_state_dict: group {gi}'s {k} is {s[k]}, this "
                                     f"optimizer was built with {self._fixed[gi][k]}")
        for gi, (s, g, opt) in enumerate(zip(saved, self.param_groups, self._opts)):
            names = toroid._toroid.state_names(self.kind)
            arrays = {n: [] for n in names}
            steps = 0
            for index, p in zip(s["params"], g["params"]):
                entry = state_dict["state"].get(index, {})
                if entry:
                    steps = int(entry["step"])
                for n in names:
                    t = entry.get(n)
                    if t is None:
                        t = torch.zeros_like(p)
                    if t.numel() != p.numel():
                        raise ValueError(f"ShardedOptimizer.load_state_dict: group {gi}, parameter "
                                         f"'{self._names.get(id(p), '?')}': {n} has {t.numel()} elements, the "
                                         f"parameter {p.numel()}")
                    arrays[n].append(t.detach().reshape(-1).to(torch.float32).numpy())
            opt.set_state(steps, {n: np.concatenate(a) for n, a in arrays.items()})
            for k, v in s.items():
                if k not in ("params",) and k not in _FIXED_KEYS:
                    g[k] = v

    @property
    def handed_over(self):
        """How many parameters' gradients autograd has handed over in this step so far (their
        buckets' reduce-scatters start as they fill)."""
        return sum(len(r) for r in self._ready)

    # ---- gradient accumulation

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate gradients; the next one outside hands them
        over (as DDP's no_sync)."""
        was, self._syncing = self._syncing, False
        try:
            yield
        finally:
            self._syncing = was

    # ---- internals

    def _group_settings(self, g):
        settings = dict(self._settings)
        settings.update(learning_rate=float(g["lr"]), beta1=float(g["betas"][0]), beta2=float(g["betas"][1]),
                        epsilon=float(g["eps"]), weight_decay=float(g["weight_decay"]), momentum=float(g["momentum"]),
                        nesterov=bool(g["nesterov"]), lars_trust_coefficient=float(g["trust_coefficient"]))
        # lr from the group at every step: lr schedulers write it there.
        settings["schedule"] = lambda step, base, g=g: float(g["lr"])
        return settings

    @staticmethod
    def _check_param(p, name):
        where = f"ShardedOptimizer: parameter '{name}'"
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"{where} is a {type(p).__name__}, expected a tensor")
        if p.dtype != torch.float32:
            raise TypeError(f"{where} is {p.dtype}; toroid updates float32 master weights")
        if p.device.type != "cpu":
            raise ValueError(f"{where} is on {p.device}; toroid works on CPU tensors")
        if not p.is_leaf or not p.requires_grad:
            raise ValueError(f"{where} is not a leaf that requires grad")
        if not p.is_contiguous():
            raise ValueError(f"{where} is not contiguous")

    def _check_fixed(self, gi, g):
        for k in _FIXED_KEYS:
            if _differs(g[k], self._fixed[gi][k]):
                raise ValueError(f"ShardedOptimizer: param group {gi}'s {k} changed from {self._fixed[gi][k]} to "
                                 f"{g[k]}; only lr may change after construction")

    def _adopt_grad(self, gi, i, p):
        """Makes p's gradient the buffer's: copied in when autograd made a new tensor, zero
        when there is none (a parameter this step did not use)."""
        buf = self._grads[gi][i]
        if p.grad is None:
            buf.zero_()
        elif p.grad is not buf:
            buf.copy_(p.grad)
        p.grad = buf

    def _make_hook(self, gi, i):
        def hook(*_):
            if not self._syncing:
                return
            p = self.param_groups[gi]["params"][i]
            ready = self._ready[gi]
            if i in ready:
                raise RuntimeError(f"ShardedOptimizer: parameter '{self._names.get(id(p), '?')}' got a gradient "
                                   "again after it was handed over in this step; accumulate over several "
                                   "backward passes under optimizer.no_sync()")
            with torch.no_grad():
                self._adopt_grad(gi, i, p)
            ready.add(i)
            self._opts[gi].ready(i)
        return hook


def _differs(a, b):
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return tuple(a) != tuple(b)
    return a != b
