// Data-parallel training with weight-update sharding: an MLP classifier on synthetic data, each
// rank computing the gradient of its slice of every global batch, the gradient summation
// overlapped with the backward pass (--overlap on: each layer's gradients are marked ready as
// soon as the backward pass has them, docs/overlap.md).
//
//   mpirun -np 4 ./train_mlp --optimizer adam --shard on --steps 50
//   mpirun -np 2 ./train_mlp --layers 4 --hidden 1024 --inputs 256 --batch 16 --bucket-kb 2048 --overlap off
//   mpirun -np 4 ./train_mlp --optimizer lamb --bf16-grads on --checkpoint run.ckpt
//   mpirun -np 2 ./train_mlp --optimizer lamb --resume run.ckpt --steps 20
//
// Data: sample k of step s has inputs x = deterministic noise(seed, s, k) and the label a fixed
// random "teacher" gives x, so every rank count sees the same global batches and the same
// loss curve. Gradients are sums over the rank's samples divided by the global batch size, so
// the optimizer sums them (average off) to get the exact mean over the global batch even when
// the batch does not split evenly.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <toroid/toroid.hpp>
#include <vector>

namespace {

struct Options {
  toroid::OptimizerKind optimizer = toroid::OptimizerKind::adam;
  bool shard = true, bf16_grads = false, overlap = true;
  int steps = 30, batch = 256, inputs = 32, hidden = 64, layers = 1, classes = 10;
  long bucket_kb = 0, first_bucket_kb = 0;  // 0: the optimizer's defaults
  double lr = 0;                            // 0: the optimizer's default below
  std::uint64_t seed = 1;
  std::string checkpoint, resume;
};

// ---- command line: every bad value is an error naming the option ----
bool on_off(const std::string& opt, const std::string& v) {
  if (v == "on") return true;
  if (v == "off") return false;
  throw std::invalid_argument(opt + ": expected on or off, got '" + v + "'");
}
long positive(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n <= 0 || n > (1L << 30))
    throw std::invalid_argument(opt + ": expected a positive integer, got '" + v + "'");
  return n;
}
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    if (opt == "--help" || opt == "-h") {
      std::printf(
          "train_mlp [--optimizer sgd|adam|adamw|lamb|lars] [--shard on|off] [--bf16-grads "
          "on|off]\n"
          "          [--steps N] [--batch N] [--inputs N] [--hidden N] [--layers N (hidden "
          "layers)]\n"
          "          [--overlap on|off] [--bucket-kb N] [--first-bucket-kb N] [--lr X] [--seed N]\n"
          "          [--checkpoint FILE (save at the end)] [--resume FILE (load first)]\n");
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument(opt + ": missing value");
    const std::string v = argv[++i];
    if (opt == "--optimizer")
      o.optimizer = toroid::parse_optimizer_kind(v);
    else if (opt == "--shard")
      o.shard = on_off(opt, v);
    else if (opt == "--bf16-grads")
      o.bf16_grads = on_off(opt, v);
    else if (opt == "--overlap")
      o.overlap = on_off(opt, v);
    else if (opt == "--layers")
      o.layers = static_cast<int>(positive(opt, v));
    else if (opt == "--bucket-kb")
      o.bucket_kb = positive(opt, v);
    else if (opt == "--first-bucket-kb")
      o.first_bucket_kb = positive(opt, v);
    else if (opt == "--steps")
      o.steps = static_cast<int>(positive(opt, v));
    else if (opt == "--batch")
      o.batch = static_cast<int>(positive(opt, v));
    else if (opt == "--inputs")
      o.inputs = static_cast<int>(positive(opt, v));
    else if (opt == "--hidden")
      o.hidden = static_cast<int>(positive(opt, v));
    else if (opt == "--seed")
      o.seed = static_cast<std::uint64_t>(positive(opt, v));
    else if (opt == "--checkpoint")
      o.checkpoint = v;
    else if (opt == "--resume")
      o.resume = v;
    else if (opt == "--lr") {
      char* end = nullptr;
      o.lr = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.lr > 0) || !std::isfinite(o.lr))
        throw std::invalid_argument("--lr: expected a positive number, got '" + v + "'");
    } else {
      throw std::invalid_argument("unknown option '" + opt + "' (see --help)");
    }
  }
  return o;
}

// ---- synthetic data: a counter-based generator, so sample k of step s is the same anywhere ----
double noise(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t z =
      seed * 0x9e3779b97f4a7c15ull ^ a * 0xbf58476d1ce4e5b9ull ^ b * 0x94d049bb133111ebull ^ c;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // uniform in [-1, 1)
}

// A multi-layer perceptron: `layers` hidden layers of `hid` ReLU units, then `out` logits,
// trained on a batch at a time, so the backward pass runs layer by layer, last first, and each
// layer's gradient is final (ready to be summed) as soon as that layer is done.
//
//   x -> [fc1] -> relu -> [fc2] -> relu -> ... -> [fcL] -> softmax cross-entropy
//   backward:                               dL/d fcL first ... dL/d fc1 last
struct Mlp {
  struct Layer {
    int in, out;
    std::vector<float> w, b, gw, gb;  // weights [out][in], biases; gradients of this rank's samples
  };
  std::vector<Layer> layers;
  std::vector<std::vector<float>>
      acts;  // acts[l]: input of layer l for every sample [n][in]; acts.back(): logits
  std::vector<float> delta,
      next_delta;  // d loss / d (pre-activation) of the layer being back-propagated

  Mlp(int inputs, int hidden, int hidden_layers, int classes, std::uint64_t seed) {
    int in = inputs;
    for (int l = 0; l <= hidden_layers; ++l) {
      const int out = l == hidden_layers ? classes : hidden;
      Layer layer{in,
                  out,
                  std::vector<float>(std::size_t(out) * in),
                  std::vector<float>(out),
                  std::vector<float>(std::size_t(out) * in),
                  std::vector<float>(out)};
      const double scale = std::sqrt(3.0 / in);
      for (std::size_t k = 0; k < layer.w.size(); ++k)
        layer.w[k] = static_cast<float>(scale * noise(seed, std::uint64_t(l) + 1, k, 0));
      layers.push_back(std::move(layer));
      in = out;
    }
  }
  std::size_t parameter_count() const {
    std::size_t n = 0;
    for (const auto& l : layers) n += l.w.size() + l.b.size();
    return n;
  }
  static std::string name(std::size_t l, const char* what) {
    return "fc" + std::to_string(l + 1) + "." + what;
  }
  std::vector<toroid::Parameter> parameters() {
    std::vector<toroid::Parameter> out;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      out.emplace_back(name(l, "weight"), std::span<float>(layers[l].w),
                       std::span<const float>(layers[l].gw));
      out.emplace_back(name(l, "bias"), std::span<float>(layers[l].b),
                       std::span<const float>(layers[l].gb));
    }
    return out;
  }

  // x: n samples of `inputs`; returns the summed loss; leaves every layer's input in acts.
  double forward(const std::vector<float>& x, const std::vector<int>& labels, std::size_t n) {
    acts.resize(layers.size() + 1);
    acts[0] = x;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const Layer& L = layers[l];
      auto& y = acts[l + 1];
      y.assign(n * L.out, 0.0f);
      for (std::size_t s = 0; s < n; ++s)
        for (int o = 0; o < L.out; ++o) {
          const float* w = L.w.data() + std::size_t(o) * L.in;
          const float* a = acts[l].data() + s * L.in;
          float z = L.b[o];
          for (int i = 0; i < L.in; ++i) z += w[i] * a[i];
          y[s * L.out + o] = l + 1 < layers.size() ? std::max(z, 0.0f) : z;
        }
    }
    double loss = 0;
    const int classes = layers.back().out;
    delta.assign(n * classes, 0.0f);
    for (std::size_t s = 0; s < n; ++s) {
      const float* z = acts.back().data() + s * classes;
      const float top = *std::max_element(z, z + classes);
      double total = 0;
      for (int c = 0; c < classes; ++c) total += std::exp(double(z[c]) - top);
      loss += std::log(total) + top - z[labels[s]];
      for (int c = 0; c < classes; ++c)  // d loss / d logit = softmax - onehot
        delta[s * classes + c] =
            static_cast<float>(std::exp(double(z[c]) - top) / total - (c == labels[s]));
    }
    return loss;
  }

  // Layer by layer from the last: the gradients times `scale`, and after each layer
  // `on_layer(l)` (the caller marks its gradients ready); `poll()` runs between rows so that
  // communication can move during a long layer.
  template <class OnLayer, class Poll>
  void backward(std::size_t n, float scale, OnLayer on_layer, Poll poll) {
    for (std::size_t l = layers.size(); l-- > 0;) {
      Layer& L = layers[l];
      std::fill(L.gb.begin(), L.gb.end(), 0.0f);
      std::fill(L.gw.begin(), L.gw.end(), 0.0f);
      for (std::size_t s = 0; s < n; ++s)
        for (int o = 0; o < L.out; ++o) L.gb[o] += delta[s * L.out + o] * scale;
      for (std::size_t s = 0; s < n; ++s) {
        const float* a = acts[l].data() + s * L.in;
        for (int o = 0; o < L.out; ++o) {
          const float d = delta[s * L.out + o] * scale;
          float* g = L.gw.data() + std::size_t(o) * L.in;
          for (int i = 0; i < L.in; ++i) g[i] += d * a[i];
        }
        poll();
      }
      if (l > 0) {  // d loss / d input of this layer, through the previous layer's ReLU
        next_delta.assign(n * L.in, 0.0f);
        for (std::size_t s = 0; s < n; ++s) {
          float* d_in = next_delta.data() + s * L.in;
          for (int o = 0; o < L.out; ++o) {
            const float d = delta[s * L.out + o];
            const float* w = L.w.data() + std::size_t(o) * L.in;
            for (int i = 0; i < L.in; ++i) d_in[i] += d * w[i];
          }
          const float* a = acts[l].data() + s * L.in;
          for (int i = 0; i < L.in; ++i)
            if (a[i] <= 0) d_in[i] = 0;
          poll();
        }
      }
      on_layer(l);
      if (l > 0) delta.swap(next_delta);
    }
  }
};

// The teacher's label: argmax of a fixed random linear map of x.
int teacher_label(const std::vector<float>& x, int classes, std::uint64_t seed) {
  int best = 0;
  double best_score = -INFINITY;
  for (int c = 0; c < classes; ++c) {
    double s = 0;
    for (std::size_t k = 0; k < x.size(); ++k) s += noise(seed, 3, std::size_t(c), k) * x[k];
    if (s > best_score) best_score = s, best = c;
  }
  return best;
}

struct Timing {
  double forward = 0, backward = 0, reduce = 0, gather = 0, update = 0;
};

int run(const Options& o) {
  toroid::Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size(), r = comm.rank();
  Mlp model(o.inputs, o.hidden, o.layers, o.classes, o.seed);
  toroid::OptimizerConfig config;
  config.kind = o.optimizer;
  config.learning_rate = o.lr > 0                                     ? o.lr
                         : o.optimizer == toroid::OptimizerKind::sgd  ? 0.1
                         : o.optimizer == toroid::OptimizerKind::lars ? 1.0
                                                                      : 0.01;
  config.weight_decay = 1e-4;
  config.no_weight_decay = {"bias"};
  config.no_trust_ratio = {"bias"};
  config.shard = o.shard;
  config.bf16_gradients = o.bf16_grads;
  config.average = false;  // gradients are already divided by the global batch
  if (o.bucket_kb > 0) config.bucket_bytes = std::size_t(o.bucket_kb) << 10;
  if (o.first_bucket_kb > 0) config.first_bucket_bytes = std::size_t(o.first_bucket_kb) << 10;
  toroid::ShardedOptimizer opt(comm, model.parameters(), config);
  if (!o.resume.empty()) opt.load(o.resume);

  // This rank's slice of every global batch (the first batch % p ranks take one more sample).
  const toroid::Block slice = toroid::block_of(static_cast<std::uint64_t>(o.batch), p, r);
  const std::size_t n = slice.count;
  std::vector<float> x(n * o.inputs), sample(o.inputs);
  std::vector<int> labels(n);
  Timing time;
  // With overlap, each layer's gradients are marked ready as the backward pass finishes them
  // (bias first: reverse registration order, the optimizer's initial bucket order) and the
  // buckets in flight get a progress round every sample row; without, step() starts everything.
  auto on_layer = [&](std::size_t l) {
    if (!o.overlap) return;
    opt.ready(Mlp::name(l, "bias"));
    opt.ready(Mlp::name(l, "weight"));
  };
  auto poll = [&] {
    if (o.overlap) opt.poll();
  };
  const std::int64_t first = opt.steps_taken() + 1;
  for (std::int64_t step = first; step < first + o.steps; ++step) {
    const double t0 = MPI_Wtime();
    for (std::size_t j = 0; j < n; ++j) {
      const std::uint64_t k = slice.offset + j;
      for (int i = 0; i < o.inputs; ++i)
        sample[i] = static_cast<float>(noise(o.seed, 4 + std::uint64_t(step), k, std::uint64_t(i)));
      std::copy(sample.begin(), sample.end(), x.begin() + static_cast<long>(j * o.inputs));
      labels[j] = teacher_label(sample, o.classes, o.seed);
    }
    double loss = model.forward(x, labels, n);
    const double t1 = MPI_Wtime();
    model.backward(n, 1.0f / static_cast<float>(o.batch), on_layer, poll);
    const double t2 = MPI_Wtime();
    const toroid::StepReport rep = opt.step();
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, comm.mpi_comm());
    if (step > first || o.steps == 1) {  // the first step warms up (and may rebuild the buckets)
      time.forward += t1 - t0;
      time.backward += t2 - t1;
      time.reduce += rep.reduce_seconds;
      time.gather += rep.gather_seconds;
      time.update += rep.update_seconds;
    }
    if (r == 0) std::printf("step %lld loss %.9g\n", static_cast<long long>(step), loss / o.batch);
  }
  double worst[5] = {time.forward, time.backward, time.reduce, time.gather, time.update};
  MPI_Allreduce(MPI_IN_PLACE, worst, 5, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
  if (r == 0) {
    const double per = 1e3 / std::max(1, o.steps - 1);
    std::printf(
        "%s, %zu parameters in %zu layers, %d ranks, shard %s, bf16 gradients %s, overlap %s, "
        "%zu buckets, progress %s, optimizer state %zu bytes/rank\n",
        std::string(toroid::to_string(o.optimizer)).c_str(), model.parameter_count(),
        model.layers.size(), p, o.shard ? "on" : "off", o.bf16_grads ? "on" : "off",
        o.overlap ? "on" : "off", opt.buckets().size(),
        std::string(toroid::to_string(comm.progress_mode())).c_str(), opt.state_bytes());
    std::printf(
        "time per step (ms, slowest rank, after the first): forward %.3f, backward %.3f, "
        "exposed communication %.3f (reduce %.3f, gather %.3f), update %.3f\n",
        worst[0] * per, worst[1] * per, (worst[2] + worst[3]) * per, worst[2] * per, worst[3] * per,
        worst[4] * per);
  }
  if (!o.checkpoint.empty()) opt.save(o.checkpoint);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A progress thread (TOROID_PROGRESS=thread) calls MPI beside the training loop.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    rc = run(parse(argc, argv));
  } catch (
      const std::exception& e) {  // toroid::Error on every rank alike; options the same everywhere
    if (rank == 0) std::fprintf(stderr, "train_mlp: error: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
