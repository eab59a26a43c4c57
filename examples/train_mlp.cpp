// Data-parallel training with weight-update sharding: a one-hidden-layer MLP classifier on
// synthetic data, each rank computing the gradient of its slice of every global batch.
//
//   mpirun -np 4 ./train_mlp --optimizer adam --shard on --steps 50
//   mpirun -np 4 ./train_mlp --optimizer lamb --bf16-grads on --checkpoint run.ckpt
//   mpirun -np 2 ./train_mlp --optimizer lamb --resume run.ckpt --steps 20
//
// Data: sample k of step s has inputs x = deterministic noise(seed, s, k) and the label a fixed
// random "teacher" gives x, so every rank count sees the same global batches and the same
// loss curve. Gradients are sums over the rank's samples divided by the global batch size, so
// the optimizer sums them (average off) to get the exact mean over the global batch even when
// the batch does not split evenly.
#include <toroid/toroid.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Options {
  toroid::OptimizerKind optimizer = toroid::OptimizerKind::adam;
  bool shard = true, bf16_grads = false;
  int steps = 30, batch = 256, inputs = 32, hidden = 64, classes = 10;
  double lr = 0;  // 0: the optimizer's default below
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
      std::printf("train_mlp [--optimizer sgd|adam|adamw|lamb|lars] [--shard on|off] [--bf16-grads on|off]\n"
                  "          [--steps N] [--batch N] [--inputs N] [--hidden N] [--lr X] [--seed N]\n"
                  "          [--checkpoint FILE (save at the end)] [--resume FILE (load first)]\n");
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument(opt + ": missing value");
    const std::string v = argv[++i];
    if (opt == "--optimizer") o.optimizer = toroid::parse_optimizer_kind(v);
    else if (opt == "--shard") o.shard = on_off(opt, v);
    else if (opt == "--bf16-grads") o.bf16_grads = on_off(opt, v);
    else if (opt == "--steps") o.steps = static_cast<int>(positive(opt, v));
    else if (opt == "--batch") o.batch = static_cast<int>(positive(opt, v));
    else if (opt == "--inputs") o.inputs = static_cast<int>(positive(opt, v));
    else if (opt == "--hidden") o.hidden = static_cast<int>(positive(opt, v));
    else if (opt == "--seed") o.seed = static_cast<std::uint64_t>(positive(opt, v));
    else if (opt == "--checkpoint") o.checkpoint = v;
    else if (opt == "--resume") o.resume = v;
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
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ a * 0xbf58476d1ce4e5b9ull ^ b * 0x94d049bb133111ebull ^ c;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // uniform in [-1, 1)
}

struct Mlp {
  int in, hid, out;
  std::vector<float> w1, b1, w2, b2;      // weights
  std::vector<float> gw1, gb1, gw2, gb2;  // gradients of this rank's samples
  Mlp(int i, int h, int o, std::uint64_t seed)
      : in(i), hid(h), out(o), w1(std::size_t(h) * i), b1(h), w2(std::size_t(o) * h), b2(o),
        gw1(w1.size()), gb1(h), gw2(w2.size()), gb2(o) {
    const double s1 = std::sqrt(3.0 / i), s2 = std::sqrt(3.0 / h);
    for (std::size_t k = 0; k < w1.size(); ++k) w1[k] = static_cast<float>(s1 * noise(seed, 1, k, 0));
    for (std::size_t k = 0; k < w2.size(); ++k) w2[k] = static_cast<float>(s2 * noise(seed, 2, k, 0));
  }
  std::vector<toroid::Parameter> parameters() {
    return {{"fc1.weight", w1, gw1}, {"fc1.bias", b1, gb1}, {"fc2.weight", w2, gw2}, {"fc2.bias", b2, gb2}};
  }
  // Adds d(loss of sample)/d(params) * scale to the gradients; returns the sample's loss.
  double train_sample(const std::vector<float>& x, int label, float scale, std::vector<float>& h,
                      std::vector<float>& logits) {
    for (int j = 0; j < hid; ++j) {
      float a = b1[j];
      for (int k = 0; k < in; ++k) a += w1[std::size_t(j) * in + k] * x[k];
      h[j] = std::max(a, 0.0f);
    }
    float top = -INFINITY;
    for (int c = 0; c < out; ++c) {
      float a = b2[c];
      for (int j = 0; j < hid; ++j) a += w2[std::size_t(c) * hid + j] * h[j];
      logits[c] = a;
      top = std::max(top, a);
    }
    double total = 0;
    for (int c = 0; c < out; ++c) total += std::exp(double(logits[c]) - top);
    const double loss = std::log(total) + top - logits[label];
    for (int c = 0; c < out; ++c) {  // d loss / d logit = softmax - onehot
      const float d = static_cast<float>((std::exp(double(logits[c]) - top) / total - (c == label)) * scale);
      gb2[c] += d;
      for (int j = 0; j < hid; ++j) gw2[std::size_t(c) * hid + j] += d * h[j];
      logits[c] = d;
    }
    for (int j = 0; j < hid; ++j) {
      if (h[j] <= 0) continue;
      float d = 0;
      for (int c = 0; c < out; ++c) d += logits[c] * w2[std::size_t(c) * hid + j];
      gb1[j] += d;
      for (int k = 0; k < in; ++k) gw1[std::size_t(j) * in + k] += d * x[k];
    }
    return loss;
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
  double compute = 0, communicate = 0, update = 0;
};

int run(const Options& o) {
  toroid::Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size(), r = comm.rank();
  Mlp model(o.inputs, o.hidden, o.classes, o.seed);
  toroid::OptimizerConfig config;
  config.kind = o.optimizer;
  config.learning_rate = o.lr > 0 ? o.lr
                         : o.optimizer == toroid::OptimizerKind::sgd  ? 0.1
                         : o.optimizer == toroid::OptimizerKind::lars ? 1.0
                                                                      : 0.01;
  config.weight_decay = 1e-4;
  config.no_weight_decay = {"bias"};
  config.no_trust_ratio = {"bias"};
  config.shard = o.shard;
  config.bf16_gradients = o.bf16_grads;
  config.average = false;  // gradients are already divided by the global batch
  toroid::ShardedOptimizer opt(comm, model.parameters(), config);
  if (!o.resume.empty()) opt.load(o.resume);

  // This rank's slice of every global batch (the first batch % p ranks take one more sample).
  const toroid::Block slice = toroid::block_of(static_cast<std::uint64_t>(o.batch), p, r);
  std::vector<float> x(o.inputs), h(o.hidden), logits(o.classes);
  Timing time;
  const std::int64_t first = opt.steps_taken() + 1;
  for (std::int64_t step = first; step < first + o.steps; ++step) {
    const double t0 = MPI_Wtime();
    for (auto* g : {&model.gw1, &model.gb1, &model.gw2, &model.gb2}) std::fill(g->begin(), g->end(), 0.0f);
    double loss = 0;
    for (std::uint64_t k = slice.offset; k < slice.offset + slice.count; ++k) {
      for (int i = 0; i < o.inputs; ++i) x[i] = static_cast<float>(noise(o.seed, 4 + std::uint64_t(step), k, std::uint64_t(i)));
      loss += model.train_sample(x, teacher_label(x, o.classes, o.seed), 1.0f / static_cast<float>(o.batch), h, logits);
    }
    const double t1 = MPI_Wtime();
    const toroid::StepReport rep = opt.step();
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, comm.mpi_comm());
    time.compute += t1 - t0;
    time.communicate += rep.reduce_seconds + rep.gather_seconds;
    time.update += rep.update_seconds;
    if (r == 0) std::printf("step %lld loss %.6f\n", static_cast<long long>(step), loss / o.batch);
  }
  double worst[3] = {time.compute, time.communicate, time.update};
  MPI_Allreduce(MPI_IN_PLACE, worst, 3, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
  if (r == 0) {
    const std::size_t params = model.w1.size() + model.b1.size() + model.w2.size() + model.b2.size();
    const double per = 1e3 / o.steps;
    std::printf("%s, %zu parameters, %d ranks, shard %s, bf16 gradients %s, optimizer state %zu bytes/rank\n",
                std::string(toroid::to_string(o.optimizer)).c_str(), params, p, o.shard ? "on" : "off",
                o.bf16_grads ? "on" : "off", opt.state_bytes());
    std::printf("time per step (ms, slowest rank): forward+backward %.3f, gradient communication %.3f, update %.3f\n",
                worst[0] * per, worst[1] * per, worst[2] * per);
  }
  if (!o.checkpoint.empty()) opt.save(o.checkpoint);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    rc = run(parse(argc, argv));
  } catch (const std::exception& e) {  // toroid::Error on every rank alike; options the same everywhere
    if (rank == 0) std::fprintf(stderr, "train_mlp: error: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
