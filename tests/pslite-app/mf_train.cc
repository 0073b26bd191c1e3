// mf_train: biased matrix factorisation on MovieLens-100k, trained on BytePS's PS-lite.
//
// One PS-lite key per embedding row (users, then items), each row `dim` factors and a bias.
// Workers pull the rows of a mini-batch, push the gradients of the rows they touched, and
// the servers apply Adagrad (or SGD) in their request handle; worker 0 evaluates the test
// RMSE as training goes. See README.md in this directory ("mf_train") for the data, the
// key mapping, the options and the output lines.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

#include "app_hash.h"
#include "app_options.h"
#include "app_node.h"

namespace {

const char kUsage[] =
    "usage: mf_train --data=PATH [--dim=N] [--epochs=N] [--batch=N] [--lr=X] [--reg=X]\n"
    "                [--opt=adagrad|sgd] [--seed=N] [--test-frac=X] [--eval-every=N]\n"
    "                [--target-rmse=X] [--dump-grads=FILE] [--dump-count=N] [--dump-every=N]\n"
    "       mf_train --data=PATH --write-hot-keys=FILE [--hot-count=K] [--hot-servers=S] [--seed=N]\n"
    "Run one copy per PS-lite node (scheduler, servers, workers) with the same options,\n"
    "e.g. scripts/pslaunch.py --servers 1 --workers 4 -- mf_train --data=ml-100k.inter\n"
    "Every option can also be given in the environment (argv wins):\n";

// One option: its name, environment variable, default (as text) and help.
struct OptionSpec {
  const char* name;
  const char* env;
  const char* def;
  const char* help;
};

const OptionSpec kOptions[] = {
    {"data", "MF_DATA", "", "ml-100k.inter: tab-separated, header of typed column names"},
    {"dim", "MF_DIM", "16", "factors per row (the row also holds a bias: val_len = dim + 1)"},
    {"epochs", "MF_EPOCHS", "15", "passes of each worker over its shard"},
    {"batch", "MF_BATCH", "1024", "ratings per worker step"},
    {"lr", "MF_LR", "0.05", "learning rate of the servers' update"},
    {"reg", "MF_REG", "0.1", "L2 regularisation of the factors, per rating"},
    {"opt", "MF_OPT", "adagrad", "server update: adagrad or sgd"},
    {"seed", "MF_SEED", "1", "seed of the split, shards, batch order and initial rows"},
    {"test-frac", "MF_TEST_FRAC", "0.1", "share of the ratings held out for the test RMSE"},
    {"eval-every", "MF_EVAL_EVERY", "0", "worker 0 evaluates every N of its steps (0: each epoch)"},
    {"target-rmse", "MF_TARGET_RMSE", "0", "stop every worker when the test RMSE reaches X (0: never)"},
    {"sync", "MF_SYNC", "0",
     "1: synchronous SGD as MXNet dist_sync: every worker makes the same steps per epoch (its shard "
     "wrapped around) and waits for all after each step (a worker barrier; worker 0 evaluates before it)"},
    {"dump-grads", "MF_DUMP_GRADS", "", "write pushed gradient values (raw f32 LE) to FILE; %r = rank"},
    {"dump-count", "MF_DUMP_COUNT", "1048576", "at most N values per worker in --dump-grads"},
    {"dump-every", "MF_DUMP_EVERY", "10", "--dump-grads takes the gradients of every Nth step"},
    {"write-hot-keys", "MF_WRITE_HOT_KEYS", "", "write the --hot-count most updated rows' keys to FILE, exit"},
    {"hot-count", "MF_HOT_COUNT", "1000", "rows in --write-hot-keys"},
    {"hot-servers", "MF_HOT_SERVERS", "1", "the job's server count, for --write-hot-keys (no PS-lite)"},
};

enum class Opt { kAdagrad, kSgd };

struct Config {
  std::string data;
  int dim = 0;
  int epochs = 0;
  int batch = 0;
  double lr = 0;
  double reg = 0;
  Opt opt = Opt::kAdagrad;
  uint64_t seed = 0;
  double test_frac = 0;
  long long eval_every = 0;
  double target_rmse = 0;
  bool sync = false;
  std::string dump_grads;
  long long dump_count = 0;
  long long dump_every = 0;
  std::string write_hot_keys;
  long long hot_count = 0;
  int hot_servers = 0;

  int width() const { return dim + 1; }
};

// Parses the whole of `s` as a number of type T within [lo, hi] (no sign or space games:
// the stream must consume every character; overflow and NaN fail the stream).
template <class T>
bool ParseNumber(const std::string& s, T lo, T hi, T* out) {
  std::istringstream in(s);
  T v{};
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || !(in >> v) || in.peek() != EOF ||
      !(v >= lo && v <= hi)) {
    return false;
  }
  *out = v;
  return true;
}

bool ToInt(const std::string& s, long long lo, long long hi, long long* out) { return ParseNumber(s, lo, hi, out); }
bool ToReal(const std::string& s, double lo, double hi, double* out) { return ParseNumber(s, lo, hi, out); }

// Applies one option's text to the config; false when the text is not a valid value.
bool Apply(const std::string& name, const std::string& v, Config* c) {
  long long i = 0;
  if (name == "data") return !(c->data = v).empty();
  if (name == "dim") return ToInt(v, 1, 4096, &i) && ((c->dim = static_cast<int>(i)), true);
  if (name == "epochs") return ToInt(v, 1, 1000000, &i) && ((c->epochs = static_cast<int>(i)), true);
  if (name == "batch") return ToInt(v, 1, 1 << 24, &i) && ((c->batch = static_cast<int>(i)), true);
  if (name == "lr") return ToReal(v, 1e-12, 1e6, &c->lr);
  if (name == "reg") return ToReal(v, 0, 1e6, &c->reg);
  if (name == "seed") return ToInt(v, 0, INT64_MAX, &i) && ((c->seed = static_cast<uint64_t>(i)), true);
  if (name == "test-frac") return ToReal(v, 1e-6, 0.999, &c->test_frac);
  if (name == "eval-every") return ToInt(v, 0, INT64_MAX, &c->eval_every);
  if (name == "target-rmse") return ToReal(v, 0, 1e6, &c->target_rmse);
  if (name == "sync") return ToInt(v, 0, 1, &i) && ((c->sync = i == 1), true);
  if (name == "dump-grads") return (c->dump_grads = v), true;
  if (name == "dump-count") return ToInt(v, 1, 1LL << 32, &c->dump_count);
  if (name == "dump-every") return ToInt(v, 1, INT64_MAX, &c->dump_every);
  if (name == "write-hot-keys") return (c->write_hot_keys = v), true;
  if (name == "hot-count") return ToInt(v, 1, 1LL << 32, &c->hot_count);
  if (name == "hot-servers") return ToInt(v, 1, 1 << 16, &i) && ((c->hot_servers = static_cast<int>(i)), true);
  if (name == "opt") {
    if (v == "adagrad") c->opt = Opt::kAdagrad;
    else if (v == "sgd") c->opt = Opt::kSgd;
    else return false;
    return true;
  }
  return false;
}

void PrintUsage(FILE* to) {
  std::fputs(kUsage, to);
  for (const OptionSpec& o : kOptions) {
    std::fprintf(to, "  --%-12s %-15s default %-8s %s\n", o.name, o.env, *o.def ? o.def : "-", o.help);
  }
}

// Returns 0 on success, 1 for --help, 2 for a bad option (already reported).
int ParseConfig(int argc, char* argv[], Config* cfg) {
  std::map<std::string, std::string> value;
  for (const OptionSpec& o : kOptions) value[o.name] = o.def;
  const app_options::Messages msg{"mf_train", nullptr};  // errors end in " (see --help)"
  const app_options::Syntax syntax{/*value_in_next_arg=*/true, /*flag=*/nullptr};
  int read = app_options::ReadOptions(argc, argv, kOptions, msg, syntax, &value);
  if (read != 0) return read;
  for (const OptionSpec& o : kOptions) {
    const std::string& v = value[o.name];
    bool optional_empty = v.empty() && (std::string(o.name) == "dump-grads" || std::string(o.name) == "write-hot-keys");
    if (!optional_empty && !Apply(o.name, v, cfg)) {
      std::fprintf(stderr, "mf_train: bad value '%s' for --%s (env %s): %s\n", v.c_str(), o.name, o.env,
                   o.help);
      return 2;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Seeded randomness shared by every node (splitmix64 steps).

using app_hash::SplitMix64;

uint64_t Hash(uint64_t seed, std::initializer_list<uint64_t> fields) {
  uint64_t h = SplitMix64(seed ^ 0x6d665f747261696eULL);
  for (uint64_t f : fields) h = SplitMix64(h ^ f);
  return h;
}

// A uniform double in [0, 1) from 53 bits of a hash.
double Unit(uint64_t h) { return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0); }

// Purposes of the hashes, so that no two draws share a stream.
enum Stream : uint64_t { kSplit = 1, kShard = 2, kEpoch = 3, kInit = 4 };

// Fisher-Yates with our own hash, so the order is the same on every C++ library.
template <class T>
void Shuffle(std::vector<T>* v, uint64_t seed, std::initializer_list<uint64_t> stream) {
  uint64_t h = Hash(seed, stream);
  for (size_t i = v->size(); i > 1; --i) {
    h = SplitMix64(h);
    size_t j = static_cast<size_t>(h % i);
    std::swap((*v)[i - 1], (*v)[j]);
  }
}

// ---------------------------------------------------------------------------
// Data: the ratings, users and items numbered densely in token order.

struct Rating {
  int user;
  int item;
  float value;
};

struct Dataset {
  std::vector<Rating> ratings;
  int users = 0;
  int items = 0;
};

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

// The header's column named NAME (before the ":type" suffix), or -1.
int Column(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i].substr(0, header[i].find(':')) == name) return static_cast<int>(i);
  }
  return -1;
}

// Reads a RecBole atomic file (.inter) with user_id, item_id and rating columns.
bool LoadDataset(const std::string& path, Dataset* ds, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string line;
  if (!std::getline(in, line)) {
    *err = path + " is empty";
    return false;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> header = SplitTabs(line);
  int cu = Column(header, "user_id"), ci = Column(header, "item_id"), cr = Column(header, "rating");
  if (cu < 0 || ci < 0 || cr < 0) {
    *err = path + ": the header needs user_id, item_id and rating columns, got '" + line + "'";
    return false;
  }
  size_t need = static_cast<size_t>(std::max(cu, std::max(ci, cr))) + 1;
  std::vector<std::string> user_tok, item_tok;
  std::vector<double> value;
  long long lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f = SplitTabs(line);
    double r = 0;
    if (f.size() < need || f[cu].empty() || f[ci].empty() || !ToReal(f[cr], -1e9, 1e9, &r)) {
      *err = path + ":" + std::to_string(lineno) + ": malformed rating line '" + line + "'";
      return false;
    }
    user_tok.push_back(f[cu]);
    item_tok.push_back(f[ci]);
    value.push_back(r);
  }
  if (value.empty()) {
    *err = path + " holds no ratings";
    return false;
  }
  auto number = [](const std::vector<std::string>& toks, int* count) {
    std::map<std::string, int> ids;
    for (const std::string& t : toks) ids.emplace(t, 0);
    int next = 0;
    for (auto& kv : ids) kv.second = next++;
    *count = next;
    return ids;
  };
  std::map<std::string, int> uid = number(user_tok, &ds->users);
  std::map<std::string, int> iid = number(item_tok, &ds->items);
  ds->ratings.reserve(value.size());
  for (size_t k = 0; k < value.size(); ++k) {
    ds->ratings.push_back({uid[user_tok[k]], iid[item_tok[k]], static_cast<float>(value[k])});
  }
  return true;
}

// ---------------------------------------------------------------------------
// Rows and keys. Row r (users 0..U-1, then items U..U+I-1) lives on server r mod S at key
// ranges[r mod S].begin() + r / S: consecutive rows go round-robin over the servers, for
// any server count. The last key of server 0's range is the stop flag (--target-rmse).

struct KeyMap {
  std::vector<ps::Range> ranges;

  ps::Key KeyOfRow(uint64_t row) const {
    size_t s = ranges.size();
    return ranges[row % s].begin() + row / s;
  }
  ps::Key StopKey() const { return ranges[0].end() - 1; }
};

// The initial value of a row: factors uniform in (-0.1, 0.1), bias 0; the same on any
// server layout because it depends only on the seed and the row.
void InitRow(uint64_t seed, uint64_t row, int dim, float* out) {
  for (int d = 0; d < dim; ++d) {
    out[d] = static_cast<float>(0.2 * (Unit(Hash(seed, {kInit, row, uint64_t(d)})) - 0.5));
  }
  out[dim] = 0.0f;
}

// The seeded train/test split of all ratings (shared by the workers and the hot-key
// profile), with the training set's mean and range.
struct Split {
  std::vector<int> train, test;
  float mean = 0, lo = 0, hi = 0;
};

Split SplitRatings(const Config& cfg, const Dataset& ds) {
  Split sp;
  double sum = 0;
  sp.lo = 1e30f;
  sp.hi = -1e30f;
  for (size_t k = 0; k < ds.ratings.size(); ++k) {
    const Rating& r = ds.ratings[k];
    if (Unit(Hash(cfg.seed, {kSplit, k})) < cfg.test_frac) {
      sp.test.push_back(static_cast<int>(k));
      continue;
    }
    sp.train.push_back(static_cast<int>(k));
    sum += r.value;
    sp.lo = std::min(sp.lo, r.value);
    sp.hi = std::max(sp.hi, r.value);
  }
  sp.mean = sp.train.empty() ? 0.0f : static_cast<float>(sum / sp.train.size());
  return sp;
}

uint64_t UserRow(const Dataset&, int u) { return static_cast<uint64_t>(u); }
uint64_t ItemRow(const Dataset& ds, int i) { return static_cast<uint64_t>(ds.users) + i; }

// PS-lite's default key ranges (Postoffice::GetServerKeyRanges): server s owns
// [kMaxKey / S * s, kMaxKey / S * (s + 1)).
KeyMap DefaultKeyMap(int servers) {
  KeyMap km;
  for (int s = 0; s < servers; ++s) {
    km.ranges.emplace_back(ps::kMaxKey / servers * s, ps::kMaxKey / servers * (s + 1));
  }
  return km;
}

// The offline hot-key profile: rows ranked by how many training ratings touch them (each
// touch is one pushed row gradient), written as a hot-keys file (docs/CONFIG.md,
// ZEBRA_HOT_KEYS): `KEY VALUES` per line, hottest first.
int WriteHotKeys(const Config& cfg, const Dataset& ds) {
  Split sp = SplitRatings(cfg, ds);
  std::unordered_map<uint64_t, long long> touches;
  for (int k : sp.train) {
    ++touches[UserRow(ds, ds.ratings[k].user)];
    ++touches[ItemRow(ds, ds.ratings[k].item)];
  }
  std::vector<std::pair<long long, uint64_t>> rank;
  for (const auto& kv : touches) rank.push_back({-kv.second, kv.first});
  std::sort(rank.begin(), rank.end());
  size_t k = std::min(rank.size(), static_cast<size_t>(cfg.hot_count));
  long long hot = 0, all = 2 * static_cast<long long>(sp.train.size());
  for (size_t j = 0; j < k; ++j) hot += -rank[j].first;
  std::FILE* f = std::fopen(cfg.write_hot_keys.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "mf_train: cannot write %s: %s\n", cfg.write_hot_keys.c_str(), std::strerror(errno));
    return 1;
  }
  KeyMap km = DefaultKeyMap(cfg.hot_servers);
  std::fprintf(f, "# mf_train hot rows: %zu of %zu rows, %.4f of the row gradients (seed %llu, %d servers)\n",
               k, rank.size(), all ? static_cast<double>(hot) / all : 0.0,
               static_cast<unsigned long long>(cfg.seed), cfg.hot_servers);
  for (size_t j = 0; j < k; ++j) {
    std::fprintf(f, "%llu %d\n", static_cast<unsigned long long>(km.KeyOfRow(rank[j].second)), cfg.width());
  }
  bool ok = std::fclose(f) == 0;
  std::printf("mf: hot_keys=%s rows=%zu of %zu hot_share=%.4f\n", cfg.write_hot_keys.c_str(), k, rank.size(),
              all ? static_cast<double>(hot) / all : 0.0);
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------------------
// Worker

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Writes pushed gradient values, raw little-endian f32: the whole push of every
// `every`th step (from the first), until `limit` values are written.
class GradDump {
 public:
  GradDump(const std::string& pattern, int rank, long long limit, long long every)
      : limit_(limit), every_(every) {
    if (pattern.empty()) return;
    std::string path = pattern;
    size_t at = path.find("%r");
    if (at != std::string::npos) {
      path.replace(at, 2, std::to_string(rank));
    } else if (rank != 0) {
      return;  // without %r only worker 0 writes
    }
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) std::fprintf(stderr, "mf_train: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    path_ = path;
  }
  ~GradDump() {
    if (file_) std::fclose(file_);
  }
  bool failed() const { return !path_.empty() && !file_; }
  void Write(long long step, const std::vector<float>& vals) {
    if (!file_ || written_ >= limit_ || step % every_ != 0) return;
    size_t n = static_cast<size_t>(std::min<long long>(limit_ - written_, vals.size()));
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &vals[i], 4);
      unsigned char le[4] = {static_cast<unsigned char>(bits), static_cast<unsigned char>(bits >> 8),
                             static_cast<unsigned char>(bits >> 16), static_cast<unsigned char>(bits >> 24)};
      std::fwrite(le, 1, 4, file_);
    }
    written_ += static_cast<long long>(n);
  }
  long long written() const { return written_; }
  const std::string& path() const { return path_; }

 private:
  long long limit_, every_;
  long long written_ = 0;
  std::FILE* file_ = nullptr;
  std::string path_;
};

class Trainer {
 public:
  Trainer(const Config& cfg, const Dataset& ds, KeyMap keys, int rank, int workers)
      : cfg_(cfg), ds_(ds), keys_(std::move(keys)), rank_(rank), workers_(workers), kv_(0, 0),
        dump_(cfg.dump_grads, rank, cfg.dump_count, cfg.dump_every) {
    Split();
  }

  int Run() {
    if (dump_.failed()) return 1;
    started_ = Clock::now();
    if (rank_ == 0) Evaluate(0, 0);
    // Every worker starts once worker 0 has measured the initial rows, so the initial
    // test RMSE is that of the untrained model whatever the scheduling.
    ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
    long long step = 0;
    int epoch = 0;
    bool stop = false;
    const size_t batch = static_cast<size_t>(cfg_.batch);
    // Synchronous: every worker the same steps per epoch, those of the largest shard.
    const size_t largest = (train_count_ + workers_ - 1) / workers_;
    const size_t sync_steps = (largest + batch - 1) / batch;
    for (epoch = 1; epoch <= cfg_.epochs && !stop; ++epoch) {
      std::vector<int> order = shard_;
      Shuffle(&order, cfg_.seed, {kEpoch, uint64_t(rank_), uint64_t(epoch)});
      if (cfg_.sync) {
        for (size_t k = 0; order.size() < sync_steps * batch && !shard_.empty(); ++k) {
          order.push_back(order[k]);
        }
      }
      for (size_t at = 0; at < order.size() && !stop; at += batch) {
        size_t end = std::min(order.size(), at + batch);
        stop = Step(step, order, at, end);
        ++step;
        bool last = end == order.size();
        if (rank_ == 0 && !stop &&
            (cfg_.eval_every > 0 ? step % cfg_.eval_every == 0 : last)) {
          bool reached = Evaluate(epoch, step);
          // Synchronous: the stop flag, pushed before the barrier, is in every worker's
          // next pull, worker 0's included, so all of them stop after that same step.
          if (!cfg_.sync) stop = reached;
        }
        if (cfg_.sync) ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
      }
    }
    double train_s = Seconds(started_);
    std::printf("mf: worker rank=%d steps=%lld epochs=%d pushed_rows=%lld pushed_values=%lld "
                "pulled_rows=%lld time_s=%.3f steps_per_s=%.1f%s\n",
                rank_, step, epoch - 1, pushed_rows_, pushed_values_, pulled_rows_, train_s,
                train_s > 0 ? step / train_s : 0.0, stop ? " stopped=target" : "");
    if (!dump_.path().empty()) {
      std::printf("mf: dumped %lld gradient values to %s\n", dump_.written(), dump_.path().c_str());
    }
    std::fflush(stdout);
    ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
    if (rank_ != 0) return 0;
    double rmse = Rmse();
    double total_s = Seconds(started_);
    std::printf("mf: summary workers=%d servers=%zu dim=%d batch=%d opt=%s lr=%g sync=%d steps_rank0=%lld "
                "train_ratings=%zu test_ratings=%zu time_s=%.3f initial_rmse=%.4f final_rmse=%.4f "
                "target_rmse=%g time_to_target_s=%s\n",
                workers_, keys_.ranges.size(), cfg_.dim, cfg_.batch,
                cfg_.opt == Opt::kAdagrad ? "adagrad" : "sgd", cfg_.lr, cfg_.sync ? 1 : 0, step, train_count_,
                test_.size(), total_s, initial_rmse_, rmse, cfg_.target_rmse,
                target_time_ < 0 ? "none" : std::to_string(target_time_).c_str());
    std::fflush(stdout);
    return std::isfinite(rmse) ? 0 : 1;
  }

 private:
  // Seeded train/test split of all ratings, then this worker's disjoint shard of a seeded
  // permutation of the training ratings.
  void Split() {
    ::Split sp = SplitRatings(cfg_, ds_);
    std::vector<int>& train = sp.train;
    test_ = sp.test;
    mean_ = sp.mean;
    lo_ = sp.lo;
    hi_ = sp.hi;
    train_count_ = train.size();
    Shuffle(&train, cfg_.seed, {kShard});
    size_t from = train.size() * rank_ / workers_, to = train.size() * (rank_ + 1) / workers_;
    shard_.assign(train.begin() + from, train.begin() + to);
    std::vector<uint64_t> rows;
    for (int k : test_) {
      rows.push_back(UserRow(ds_.ratings[k].user));
      rows.push_back(ItemRow(ds_.ratings[k].item));
    }
    test_keys_ = SortedKeys(rows, &test_row_key_);
  }

  uint64_t UserRow(int u) const { return ::UserRow(ds_, u); }
  uint64_t ItemRow(int i) const { return ::ItemRow(ds_, i); }

  // The distinct keys of `rows`, sorted (PS-lite needs sorted keys); `at` maps a row to
  // its position.
  std::vector<ps::Key> SortedKeys(const std::vector<uint64_t>& rows,
                                  std::unordered_map<uint64_t, size_t>* at) const {
    std::vector<std::pair<ps::Key, uint64_t>> kr;
    for (uint64_t r : rows) kr.push_back({keys_.KeyOfRow(r), r});
    std::sort(kr.begin(), kr.end());
    kr.erase(std::unique(kr.begin(), kr.end()), kr.end());
    std::vector<ps::Key> out;
    at->clear();
    for (const auto& p : kr) {
      (*at)[p.second] = out.size();
      out.push_back(p.first);
    }
    return out;
  }

  float Predict(const float* u, const float* i) const {
    float p = mean_ + u[cfg_.dim] + i[cfg_.dim];
    for (int d = 0; d < cfg_.dim; ++d) p += u[d] * i[d];
    return p;
  }

  // Step `step` over order[begin, end): pull the rows, push their gradients. Returns true
  // when the stop flag (pulled with the rows) is set.
  bool Step(long long step, const std::vector<int>& order, size_t begin, size_t end) {
    const int w = cfg_.width();
    std::vector<uint64_t> rows;
    for (size_t k = begin; k < end; ++k) {
      rows.push_back(UserRow(ds_.ratings[order[k]].user));
      rows.push_back(ItemRow(ds_.ratings[order[k]].item));
    }
    std::unordered_map<uint64_t, size_t> at;
    std::vector<ps::Key> keys = SortedKeys(rows, &at);
    size_t n = keys.size();
    bool with_stop = cfg_.target_rmse > 0;
    std::vector<ps::Key> pull_keys = keys;
    if (with_stop) pull_keys.push_back(keys_.StopKey());  // the largest key of server 0
    std::sort(pull_keys.begin(), pull_keys.end());
    ps::SArray<float> vals;
    kv_.Wait(kv_.ZPull(ps::SArray<ps::Key>(pull_keys), &vals));
    if (vals.size() != pull_keys.size() * w) {
      std::fprintf(stderr, "mf_train: pulled %zu values for %zu keys of width %d\n", vals.size(),
                   pull_keys.size(), w);
      std::exit(1);
    }
    // Positions in `vals` of the rows (the stop key sits between server 0's rows and the
    // next server's).
    std::vector<size_t> pos(n);
    bool stop = false;
    for (size_t p = 0, q = 0; p < pull_keys.size(); ++p) {
      if (with_stop && pull_keys[p] == keys_.StopKey()) {
        stop = vals[p * w] != 0.0f;
        continue;
      }
      pos[q++] = p * w;
    }
    std::vector<float> grad(n * w, 0.0f);
    for (size_t k = begin; k < end; ++k) {
      const Rating& r = ds_.ratings[order[k]];
      size_t ku = at[UserRow(r.user)], ki = at[ItemRow(r.item)];
      const float* pu = &vals[pos[ku]];
      const float* qi = &vals[pos[ki]];
      float err = Predict(pu, qi) - r.value;
      float* gu = &grad[ku * w];
      float* gi = &grad[ki * w];
      for (int d = 0; d < cfg_.dim; ++d) {
        gu[d] += err * qi[d] + static_cast<float>(cfg_.reg) * pu[d];
        gi[d] += err * pu[d] + static_cast<float>(cfg_.reg) * qi[d];
      }
      gu[cfg_.dim] += err;
      gi[cfg_.dim] += err;
      train_sq_ += static_cast<double>(err) * err;
      ++train_n_;
    }
    dump_.Write(step, grad);
    kv_.Wait(kv_.ZPush(ps::SArray<ps::Key>(keys), ps::SArray<float>(grad)));
    pulled_rows_ += static_cast<long long>(n);
    pushed_rows_ += static_cast<long long>(n);
    pushed_values_ += static_cast<long long>(grad.size());
    return stop;
  }

  // The test RMSE with the current rows (predictions clipped to the training range).
  double Rmse() {
    const int w = cfg_.width();
    ps::SArray<float> vals;
    kv_.Wait(kv_.ZPull(ps::SArray<ps::Key>(test_keys_), &vals));
    if (vals.size() != test_keys_.size() * w) {
      std::fprintf(stderr, "mf_train: evaluation pulled %zu values for %zu keys\n", vals.size(),
                   test_keys_.size());
      return NAN;
    }
    double sq = 0;
    for (int k : test_) {
      const Rating& r = ds_.ratings[k];
      const float* u = &vals[test_row_key_.at(UserRow(r.user)) * w];
      const float* i = &vals[test_row_key_.at(ItemRow(r.item)) * w];
      float p = std::min(hi_, std::max(lo_, Predict(u, i)));
      sq += static_cast<double>(p - r.value) * (p - r.value);
    }
    return test_.empty() ? NAN : std::sqrt(sq / test_.size());
  }

  // Worker 0: prints one evaluation line; returns true when the target is reached (and
  // has raised the stop flag for every worker).
  bool Evaluate(int epoch, long long step) {
    double rmse = Rmse();
    double t = Seconds(started_);
    if (step == 0) initial_rmse_ = rmse;
    std::string train = train_n_ ? " train_rmse=" + std::to_string(std::sqrt(train_sq_ / train_n_)) : "";
    train_sq_ = 0;
    train_n_ = 0;
    std::printf("mf: epoch=%d step=%lld time_s=%.3f test_rmse=%.4f%s\n", epoch, step, t, rmse,
                train.c_str());
    std::fflush(stdout);
    if (cfg_.target_rmse <= 0 || !(rmse <= cfg_.target_rmse) || step == 0) return false;
    target_time_ = t;
    std::printf("mf: target test_rmse<=%g reached epoch=%d step=%lld time_s=%.3f\n", cfg_.target_rmse,
                epoch, step, t);
    std::fflush(stdout);
    std::vector<float> flag(cfg_.width(), 0.0f);
    flag[0] = 1.0f;
    kv_.Wait(kv_.ZPush(ps::SArray<ps::Key>(std::vector<ps::Key>{keys_.StopKey()}), ps::SArray<float>(flag)));
    return true;
  }

  const Config& cfg_;
  const Dataset& ds_;
  KeyMap keys_;
  int rank_, workers_;
  ps::KVWorker<float> kv_;
  GradDump dump_;
  std::vector<int> shard_, test_;
  size_t train_count_ = 0;
  std::vector<ps::Key> test_keys_;
  std::unordered_map<uint64_t, size_t> test_row_key_;
  float mean_ = 0, lo_ = 0, hi_ = 0;
  Clock::time_point started_;
  double train_sq_ = 0;
  long long train_n_ = 0;
  double initial_rmse_ = NAN, target_time_ = -1;
  long long pushed_rows_ = 0, pushed_values_ = 0, pulled_rows_ = 0;
};

// ---------------------------------------------------------------------------
// Server: the rows of its key range, created on first touch, updated on every push.

class Server {
 public:
  Server(const Config& cfg, int rank, int servers, ps::Range range, ps::Key stop_key)
      : cfg_(cfg), rank_(rank), servers_(servers), range_(range), stop_key_(stop_key) {}

  void Handle(const ps::KVMeta& meta, const ps::KVPairs<float>& data, ps::KVServer<float>* srv) {
    std::lock_guard<std::mutex> lk(mu_);
    const size_t w = cfg_.width();
    size_t n = data.keys.size();
    if (meta.push && data.vals.size() != n * w) {
      Error("push of " + std::to_string(n) + " keys with " + std::to_string(data.vals.size()) +
            " values (width " + std::to_string(w) + ")");
      srv->Response(meta);
      return;
    }
    ps::KVPairs<float> res;
    std::vector<float> out;
    if (!meta.push) out.reserve(n * w);
    for (size_t k = 0; k < n; ++k) {
      ps::Key key = data.keys[k];
      if (key < range_.begin() || key >= range_.end()) {
        Error("key " + std::to_string(key) + " is outside this server's range");
        if (!meta.push) out.insert(out.end(), w, 0.0f);
        continue;
      }
      Row& row = RowOf(key);
      if (meta.push) {
        Update(&row, &data.vals[k * w], key == stop_key_);
      } else {
        out.insert(out.end(), row.value.begin(), row.value.end());
      }
    }
    if (meta.push) {
      ++pushes_;
      pushed_rows_ += static_cast<long long>(n);
      srv->Response(meta);
      return;
    }
    ++pulls_;
    pulled_rows_ += static_cast<long long>(n);
    res.keys = data.keys;
    res.vals = ps::SArray<float>(out);  // fresh array: the van sends it after we return
    srv->Response(meta, res);
  }

  int Finish() {
    std::lock_guard<std::mutex> lk(mu_);
    std::printf("mf: server rank=%d rows=%zu pushes=%lld pushed_rows=%lld pulls=%lld pulled_rows=%lld "
                "errors=%lld\n",
                rank_, rows_.size(), pushes_, pushed_rows_, pulls_, pulled_rows_, errors_);
    std::fflush(stdout);
    return errors_ == 0 ? 0 : 1;
  }

 private:
  struct Row {
    std::vector<float> value, acc;
  };

  Row& RowOf(ps::Key key) {
    auto it = rows_.find(key);
    if (it != rows_.end()) return it->second;
    Row& row = rows_[key];
    row.value.assign(cfg_.width(), 0.0f);
    row.acc.assign(cfg_.width(), 0.0f);
    if (key != stop_key_) {
      uint64_t r = static_cast<uint64_t>(key - range_.begin()) * servers_ + rank_;
      InitRow(cfg_.seed, r, cfg_.dim, row.value.data());
    }
    return row;
  }

  void Update(Row* row, const float* g, bool is_stop) {
    const size_t w = cfg_.width();
    if (is_stop) {
      for (size_t d = 0; d < w; ++d) row->value[d] = std::max(row->value[d], g[d]);
      return;
    }
    const float lr = static_cast<float>(cfg_.lr);
    for (size_t d = 0; d < w; ++d) {
      if (cfg_.opt == Opt::kSgd) {
        row->value[d] -= lr * g[d];
      } else {
        row->acc[d] += g[d] * g[d];
        row->value[d] -= lr * g[d] / (std::sqrt(row->acc[d]) + 1e-6f);
      }
    }
  }

  void Error(const std::string& msg) {
    if (++errors_ <= 10) std::printf("mf: FAIL server rank=%d: %s\n", rank_, msg.c_str());
    std::fflush(stdout);
  }

  const Config& cfg_;
  int rank_, servers_;
  ps::Range range_;
  ps::Key stop_key_;
  std::mutex mu_;
  std::unordered_map<ps::Key, Row> rows_;
  long long pushes_ = 0, pushed_rows_ = 0, pulls_ = 0, pulled_rows_ = 0, errors_ = 0;
};

}  // namespace

int main(int argc, char* argv[]) {
  Config cfg;
  int parsed = ParseConfig(argc, argv, &cfg);
  if (parsed == 1) {
    PrintUsage(stdout);
    return 0;
  }
  if (parsed != 0) return 2;
  Dataset ds;
  const char* role = std::getenv("DMLC_ROLE");
  bool profile = !cfg.write_hot_keys.empty();
  if (profile || (role && std::string(role) == "worker")) {
    std::string err;
    if (!LoadDataset(cfg.data, &ds, &err)) {
      std::fprintf(stderr, "mf_train: %s\n", err.c_str());
      return 2;
    }
  }
  if (profile) return WriteHotKeys(cfg, ds);

  ps::Start(0, argv[0]);
  KeyMap keys{ps::Postoffice::Get()->GetServerKeyRanges()};
  auto serve = [&](int rank) {
    Server handler(cfg, rank, ps::NumServers(), keys.ranges[rank], keys.StopKey());
    app_node::ServeUntilFinalize(&handler);
    return handler.Finish();
  };
  auto work = [&](int rank) {
    if (rank == 0) {
      std::printf("mf: data=%s ratings=%zu users=%d items=%d workers=%d servers=%d seed=%llu\n",
                  cfg.data.c_str(), ds.ratings.size(), ds.users, ds.items, ps::NumWorkers(),
                  ps::NumServers(), static_cast<unsigned long long>(cfg.seed));
      std::fflush(stdout);
    }
    Trainer trainer(cfg, ds, keys, rank, ps::NumWorkers());
    ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);  // handles are set
    return trainer.Run();
  };
  return app_node::RunRole(serve, work);
}
