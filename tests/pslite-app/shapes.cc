// shapes: a PS-lite application (BytePS's PS-lite) running the three job shapes that hurt
// in-network aggregation, with every pulled value checked exactly.
//
//   own     each worker pushes only its own keys (no key shared between workers), spread
//           over every server, several keys per server in every push;
//   uneven  worker i pushes (i + 1) times as often as worker 0, every push carrying the
//           shared keys of every server (hot candidates) plus a few keys of its own;
//   async   every worker pushes the shared keys, each push followed by a seeded random
//           pause, different per worker and per push; no barrier between pushes.
//
// Values are small integers derived from the seed, the worker's rank and the push index,
// so every sum is exact in a float and each worker can recompute every worker's
// contributions. At the end: a worker barrier, then every worker pulls every key of the
// job and compares with the exact sum. See README.md in this directory.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

#include "app_hash.h"
#include "app_options.h"
#include "app_node.h"

namespace {

const char kUsage[] =
    "usage: shapes --shape=own|uneven|async [--rounds=N] [--keys=N] [--val-len=N] [--seed=N]\n"
    "              [--pause-ms=N] [--pipeline=N] [--inject-wrong-expected]\n"
    "Run one copy per PS-lite node (scheduler, servers, workers) with the same options,\n"
    "e.g. scripts/pslaunch.py --servers 2 --workers 3 -- shapes --shape=uneven\n"
    "  --shape=S     own: each worker pushes only its own keys, on every server;\n"
    "                uneven: worker i pushes (i+1)*rounds times, shared keys + a few own keys;\n"
    "                async: shared keys, a seeded random pause after every push (env SHAPES_SHAPE)\n"
    "  --rounds=N    pushes of worker 0 (every worker but in uneven; default 20; env SHAPES_ROUNDS)\n"
    "  --keys=N      keys per push per server (default 64; env SHAPES_KEYS)\n"
    "  --val-len=N   floats per key (default 16; env SHAPES_VAL_LEN)\n"
    "  --seed=N      seed of all values and pauses (default 1; env SHAPES_SEED)\n"
    "  --pause-ms=N  async: pauses drawn from 0..N ms (default 5; env SHAPES_PAUSE_MS)\n"
    "  --pipeline=N  pushes in flight before waiting for the oldest (default 1; env SHAPES_PIPELINE)\n"
    "  --inject-wrong-expected   one expected value off by one (self-test: must FAIL;\n"
    "                env SHAPES_INJECT_WRONG=1)\n";

const int kMaxErrorsShown = 10;

enum Shape { kOwn = 0, kUneven = 1, kAsync = 2 };
const char* ShapeName(int s) {
  switch (s) {
    case kOwn: return "own";
    case kUneven: return "uneven";
    default: return "async";
  }
}

struct Config {
  int shape = -1;
  int rounds = 20;
  int keys = 64;
  int val_len = 16;
  uint64_t seed = 1;
  int pause_ms = 5;
  int pipeline = 1;
  bool inject_wrong = false;
};

// Returns 0 on success, 1 for --help, 2 for a bad option.
int ParseConfig(int argc, char* argv[], Config* cfg) {
  const app_options::Messages msg{"shapes", kUsage};
  const app_options::Name names[] = {
      {"shape", "SHAPES_SHAPE"},       {"rounds", "SHAPES_ROUNDS"},
      {"keys", "SHAPES_KEYS"},         {"val-len", "SHAPES_VAL_LEN"},
      {"seed", "SHAPES_SEED"},         {"pause-ms", "SHAPES_PAUSE_MS"},
      {"pipeline", "SHAPES_PIPELINE"}, {"inject-wrong-expected", "SHAPES_INJECT_WRONG"}};
  const app_options::Syntax syntax{/*value_in_next_arg=*/true, /*flag=*/"inject-wrong-expected"};
  auto check = [cfg](const std::string& k, const std::string& v) {
    using app_options::ParseInt;
    if (k == "rounds") return ParseInt(v, 1, 1 << 20, &cfg->rounds);
    if (k == "keys") return ParseInt(v, 1, 1 << 20, &cfg->keys);
    if (k == "val-len") return ParseInt(v, 1, 1 << 16, &cfg->val_len);
    if (k == "seed") return ParseInt(v, 0, INT64_MAX, &cfg->seed);
    if (k == "pause-ms") return ParseInt(v, 0, 60000, &cfg->pause_ms);
    if (k == "pipeline") return ParseInt(v, 1, 1 << 16, &cfg->pipeline);
    if (k == "inject-wrong-expected") return ParseInt(v, 0, 1, &cfg->inject_wrong);
    if (k == "shape") {
      cfg->shape = v == "own" ? kOwn : v == "uneven" ? kUneven : kAsync;
      return v == "own" || v == "uneven" || v == "async";
    }
    return true;
  };
  int parsed = app_options::ReadAndCheckOptions(argc, argv, names, msg, syntax, check);
  if (parsed != 0) return parsed;
  if (cfg->shape < 0) {
    msg.Bad("--shape is required");
    return 2;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// The workload, shared by workers and servers: which keys each push carries, its values.

using app_hash::Hash;

// Keys of server s: range begin + index. Indexes [0, shared) are the shared keys (pushed
// by every worker in every push), then `own` keys per worker: worker w's are
// [shared + w * own, shared + (w + 1) * own).
class Workload {
 public:
  Workload(const Config& cfg, int workers, int servers) : cfg_(cfg), workers_(workers), servers_(servers) {
    shared_ = cfg.shape == kOwn ? 0 : cfg.keys;
    own_ = cfg.shape == kOwn ? cfg.keys : cfg.shape == kUneven ? std::max(1, cfg.keys / 16) : 0;
    long long most = 0;  // most contributions to one key
    for (int w = 0; w < workers_; ++w) most += Pushes(w);
    long long budget = (1LL << 24) - 1;  // every partial sum stays exact in a float
    mag_ = static_cast<int>(std::max(1LL, std::min(100LL, budget / std::max(1LL, most))));
  }

  int workers() const { return workers_; }
  int servers() const { return servers_; }
  int val_len() const { return cfg_.val_len; }
  int shared() const { return shared_; }
  int own() const { return own_; }
  int IndexesPerServer() const { return shared_ + workers_ * own_; }

  int Pushes(int w) const { return cfg_.shape == kUneven ? (w + 1) * cfg_.rounds : cfg_.rounds; }

  // Who pushes index idx of a server: -1 for every worker, else the owner's rank.
  int OwnerOf(int idx) const { return idx < shared_ ? -1 : (idx - shared_) / own_; }

  // Contributions to index idx over the whole job.
  long long Contributions(int idx) const {
    int owner = OwnerOf(idx);
    if (owner >= 0) return Pushes(owner);
    long long n = 0;
    for (int w = 0; w < workers_; ++w) n += Pushes(w);
    return n;
  }

  // The indexes (of every server) worker w pushes: the shared ones, then its own.
  std::vector<int> IndexesOf(int w) const {
    std::vector<int> idx;
    for (int i = 0; i < shared_; ++i) idx.push_back(i);
    for (int j = 0; j < own_; ++j) idx.push_back(shared_ + w * own_ + j);
    return idx;
  }

  // An integer in [-mag, mag]: worker w's value of element e of index idx of server s in its push p.
  float Value(int w, int p, int s, int idx, int e) const {
    uint64_t h = Hash(cfg_.seed, {1, uint64_t(cfg_.shape), uint64_t(w), uint64_t(p), uint64_t(s),
                                  uint64_t(idx), uint64_t(e)});
    long long span = 2LL * mag_ + 1;
    return static_cast<float>(static_cast<long long>(h % span) - mag_);
  }

  // async: the pause after worker w's push p, in microseconds, 0..pause_ms.
  long long PauseUs(int w, int p) const {
    if (cfg_.pause_ms <= 0) return 0;
    return static_cast<long long>(Hash(cfg_.seed, {2, uint64_t(w), uint64_t(p)}) %
                                  (static_cast<uint64_t>(cfg_.pause_ms) * 1000 + 1));
  }

 private:
  Config cfg_;
  int workers_, servers_;
  int shared_ = 0, own_ = 0;
  int mag_ = 1;
};

// ---------------------------------------------------------------------------
// Worker

struct Slot {  // one key of a key list: where it lives and its value offset
  int server, idx;
};

struct KeyList {
  std::vector<ps::Key> keys;
  std::vector<Slot> slots;
};

// Worker w's keys in key order (server ranges ascend, indexes ascend within a server).
KeyList PushKeys(const Workload& wl, const std::vector<ps::Range>& ranges, int w) {
  KeyList kl;
  std::vector<int> idx = wl.IndexesOf(w);
  for (int s = 0; s < wl.servers(); ++s) {
    for (int i : idx) {
      kl.keys.push_back(ranges[s].begin() + static_cast<ps::Key>(i));
      kl.slots.push_back({s, i});
    }
  }
  return kl;
}

// Every key of the job, in key order.
KeyList AllKeys(const Workload& wl, const std::vector<ps::Range>& ranges) {
  KeyList kl;
  for (int s = 0; s < wl.servers(); ++s) {
    for (int i = 0; i < wl.IndexesPerServer(); ++i) {
      kl.keys.push_back(ranges[s].begin() + static_cast<ps::Key>(i));
      kl.slots.push_back({s, i});
    }
  }
  return kl;
}

std::vector<float> PushValues(const Workload& wl, const KeyList& kl, int w, int p) {
  std::vector<float> vals;
  vals.reserve(kl.slots.size() * wl.val_len());
  for (const Slot& sl : kl.slots) {
    for (int e = 0; e < wl.val_len(); ++e) vals.push_back(wl.Value(w, p, sl.server, sl.idx, e));
  }
  return vals;
}

// The exact sums of every key of the job (in AllKeys order), from every worker's pushes.
std::vector<double> ExpectedSums(const Workload& wl, const KeyList& all) {
  int len = wl.val_len();
  std::map<std::pair<int, int>, size_t> pos;  // (server, index) -> position in `all`
  for (size_t k = 0; k < all.slots.size(); ++k) pos[{all.slots[k].server, all.slots[k].idx}] = k;
  std::vector<double> sum(all.slots.size() * len, 0.0);
  for (int w = 0; w < wl.workers(); ++w) {
    std::vector<int> idx = wl.IndexesOf(w);
    for (int s = 0; s < wl.servers(); ++s) {
      for (int i : idx) {
        size_t at = pos[{s, i}] * len;
        for (int p = 0; p < wl.Pushes(w); ++p) {
          for (int e = 0; e < len; ++e) sum[at + e] += wl.Value(w, p, s, i, e);
        }
      }
    }
  }
  return sum;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int RunWorker(const Config& cfg) {
  ps::KVWorker<float> kv(0, 0);
  int me = ps::MyRank();
  Workload wl(cfg, ps::NumWorkers(), ps::NumServers());
  const std::vector<ps::Range>& ranges = ps::Postoffice::Get()->GetServerKeyRanges();
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);  // apps exist
  auto t_all = std::chrono::steady_clock::now();

  KeyList mine = PushKeys(wl, ranges, me);
  ps::SArray<ps::Key> push_keys(mine.keys);
  struct InFlight {
    int ts;
    ps::SArray<float> vals;  // zero-copy: must live until the push is waited for
  };
  std::deque<InFlight> in_flight;
  double push_seconds = 0;
  int pushes = wl.Pushes(me);
  // The push+wait time of each tenth of the pushes, for the timeline line.
  std::vector<double> tenths(10, 0.0);
  for (int p = 0; p < pushes; ++p) {
    ps::SArray<float> vals(PushValues(wl, mine, me, p));
    auto t0 = std::chrono::steady_clock::now();
    in_flight.push_back({kv.ZPush(push_keys, vals, {}, p), vals});
    if (static_cast<int>(in_flight.size()) >= cfg.pipeline) {
      kv.Wait(in_flight.front().ts);
      in_flight.pop_front();
    }
    double took = Seconds(t0);
    push_seconds += took;
    tenths[static_cast<size_t>(p) * 10 / pushes] += took;
    if (cfg.shape == kAsync) {
      long long us = wl.PauseUs(me, p);
      if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  while (!in_flight.empty()) {
    kv.Wait(in_flight.front().ts);
    in_flight.pop_front();
  }
  double drained = Seconds(t0);
  push_seconds += drained;
  tenths.back() += drained;
  std::ostringstream timeline;
  for (double t : tenths) timeline << " " << static_cast<long long>(t * 1e6);
  std::printf("shapes: timeline worker rank %d: push+wait per tenth of the pushes (us):%s\n", me,
              timeline.str().c_str());

  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
  KeyList all = AllKeys(wl, ranges);
  std::vector<double> want = ExpectedSums(wl, all);
  if (cfg.inject_wrong && !want.empty()) want[0] += 1;
  ps::SArray<float> got;
  kv.Wait(kv.ZPull(ps::SArray<ps::Key>(all.keys), &got, nullptr, pushes));

  long long checked = 0, wrong = 0, problems = 0;
  auto fail = [&](const std::string& msg) {
    if (++problems <= kMaxErrorsShown) std::printf("shapes: FAIL worker rank %d shape %s: %s\n", me, ShapeName(cfg.shape), msg.c_str());
  };
  int len = wl.val_len();
  if (got.size() != want.size()) {
    fail("pulled " + std::to_string(got.size()) + " values for " + std::to_string(all.keys.size()) +
         " keys, expected " + std::to_string(want.size()));
    wrong = static_cast<long long>(want.size());
  } else {
    for (size_t k = 0; k < all.keys.size(); ++k) {
      const Slot& sl = all.slots[k];
      for (int e = 0; e < len; ++e) {
        size_t at = k * len + e;
        ++checked;
        if (static_cast<double>(got[at]) == want[at]) continue;
        ++wrong;
        int owner = wl.OwnerOf(sl.idx);
        std::ostringstream m;
        m.precision(10);
        m << "key " << all.keys[k] << " (server " << sl.server << ", index " << sl.idx << ", "
          << (owner < 0 ? std::string("shared") : "own key of worker " + std::to_string(owner)) << ", "
          << wl.Contributions(sl.idx) << " contributions) elem " << e << ": got " << got[at]
          << ", expected " << want[at];
        fail(m.str());
      }
    }
  }
  double all_seconds = Seconds(t_all);
  bool ok = problems == 0 && checked > 0;
  std::printf("shapes: %s worker rank %d shape %s: %d pushes, %lld values checked, %lld wrong; "
              "%.3f s in push+wait, %.3f s in all\n",
              ok ? "OK" : "FAIL", me, ShapeName(cfg.shape), pushes, checked, wrong, push_seconds, all_seconds);
  std::fflush(stdout);
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------------------
// Server: sums every push into a map, answers pulls with the sums.

class Server {
 public:
  Server(const Workload& wl, int rank, ps::Range range) : wl_(wl), rank_(rank), range_(range) {}

  void Handle(const ps::KVMeta& meta, const ps::KVPairs<float>& data, ps::KVServer<float>* srv) {
    std::lock_guard<std::mutex> lk(mu_);
    if (meta.push) {
      ++pushes_;
      HandlePush(data);
      srv->Response(meta);  // empty answer, after the values are stored
      return;
    }
    ++pulls_;
    // Answer with fresh arrays (the van may still be sending them after we return).
    std::vector<float> vals;
    int len = wl_.val_len();
    for (ps::Key key : data.keys) {
      int idx = Index(key);
      auto it = sum_.find(key);
      if (idx < 0 || it == sum_.end()) {
        vals.insert(vals.end(), len, 0.0f);
      } else {
        vals.insert(vals.end(), it->second.begin(), it->second.end());
      }
    }
    ps::KVPairs<float> res;
    res.keys = ps::SArray<ps::Key>(std::vector<ps::Key>(data.keys.begin(), data.keys.end()));
    res.vals = ps::SArray<float>(vals);
    srv->Response(meta, res);
  }

  // After Finalize: every key of this server got exactly the contributions the shape implies.
  int Finish() {
    std::lock_guard<std::mutex> lk(mu_);
    for (int i = 0; i < wl_.IndexesPerServer(); ++i) {
      ps::Key key = range_.begin() + static_cast<ps::Key>(i);
      auto it = count_.find(key);
      long long got = it == count_.end() ? 0 : it->second;
      if (got != wl_.Contributions(i)) {
        Error("key " + std::to_string(key) + " (index " + std::to_string(i) + "): " + std::to_string(got) +
              " contributions arrived, expected " + std::to_string(wl_.Contributions(i)));
      }
    }
    if (errors_ == 0) {
      std::printf("shapes: server rank %d handled %lld pushes, no errors\n", rank_, pushes_);
      std::fflush(stdout);
      return 0;
    }
    std::printf("shapes: FAIL server rank %d: %lld errors (%lld pushes, %lld pulls handled)\n", rank_, errors_,
                pushes_, pulls_);
    std::fflush(stdout);
    return 1;
  }

 private:
  void Error(const std::string& msg) {
    if (++errors_ <= kMaxErrorsShown) std::printf("shapes: FAIL server rank %d: %s\n", rank_, msg.c_str());
    std::fflush(stdout);
  }

  // The index of a key of this server, or -1 (an error) when it is not one of the job's.
  int Index(ps::Key key) {
    if (key < range_.begin() || key >= range_.end() ||
        key - range_.begin() >= static_cast<ps::Key>(wl_.IndexesPerServer())) {
      Error("key " + std::to_string(key) + " is not a key of this server");
      return -1;
    }
    return static_cast<int>(key - range_.begin());
  }

  void HandlePush(const ps::KVPairs<float>& data) {
    size_t n = data.keys.size();
    size_t len = static_cast<size_t>(wl_.val_len());
    if (n == 0 || data.vals.size() != n * len) {
      Error("push of " + std::to_string(n) + " keys carries " + std::to_string(data.vals.size()) +
            " values, expected " + std::to_string(len) + " a key");
      return;
    }
    for (size_t k = 0; k < data.lens.size(); ++k) {
      if (static_cast<size_t>(data.lens[k]) != len) {
        Error("push with len " + std::to_string(data.lens[k]) + ", expected " + std::to_string(len));
        return;
      }
    }
    for (size_t k = 0; k < n; ++k) {
      if (Index(data.keys[k]) < 0) continue;
      std::vector<float>& s = sum_[data.keys[k]];
      if (s.empty()) s.assign(len, 0.0f);
      for (size_t e = 0; e < len; ++e) s[e] += data.vals[k * len + e];
      ++count_[data.keys[k]];
    }
  }

  const Workload& wl_;
  int rank_;
  ps::Range range_;
  std::mutex mu_;
  std::unordered_map<ps::Key, std::vector<float>> sum_;
  std::unordered_map<ps::Key, long long> count_;
  long long pushes_ = 0, pulls_ = 0, errors_ = 0;
};

}  // namespace

int main(int argc, char* argv[]) {
  Config cfg;
  int parsed = ParseConfig(argc, argv, &cfg);
  if (parsed == 1) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (parsed != 0) return 2;

  ps::Start(0, argv[0]);
  auto serve = [&cfg](int rank) {
    Workload wl(cfg, ps::NumWorkers(), ps::NumServers());
    Server handler(wl, rank, ps::Postoffice::Get()->GetServerKeyRanges()[rank]);
    app_node::ServeUntilFinalize(&handler);
    return handler.Finish();
  };
  return app_node::RunRole(serve, [&cfg](int) { return RunWorker(cfg); });
}
