// exact_sums: a PS-lite application (BytePS's PS-lite) that checks every value it pulls.
//
// Several workers push overlapping keys to several servers; each worker derives every
// worker's contribution from a shared seed, so it knows the exact sum the servers must
// hold at each pull. See README.md in this directory for the phases and options.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
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
    "usage: exact_sums [--rounds=N] [--keys=N] [--val-len=N] [--seed=N] [--ftol=X]\n"
    "                  [--inject-wrong-expected]\n"
    "Run one copy per PS-lite node (scheduler, servers, workers) with the same options,\n"
    "e.g. scripts/pslaunch.py --servers 2 --workers 3 -- exact_sums\n"
    "  --rounds=N    rounds per phase (default 4; env EXACT_SUMS_ROUNDS)\n"
    "  --keys=N      keys per phase (default 48; env EXACT_SUMS_KEYS)\n"
    "  --val-len=N   floats per key; phase 2 uses lengths 1..N (default 4; env EXACT_SUMS_VAL_LEN)\n"
    "  --seed=N      seed of all contributions (default 12345; env EXACT_SUMS_SEED)\n"
    "  --ftol=X      relative tolerance for random floats instead of the summation-order\n"
    "                bound (n+1)*2^-24*sum|x| (default 0 = the bound; env EXACT_SUMS_FTOL)\n"
    "  --inject-wrong-expected   corrupt one expected value (self-test: must FAIL;\n"
    "                env EXACT_SUMS_INJECT_WRONG=1)\n";

// Phases; each has its own keys (the phase number is part of the key).
enum Phase { kPhasePushPull = 1, kPhaseLens = 2, kPhaseSync = 3 };
const char* PhaseName(int phase) {
  switch (phase) {
    case kPhasePushPull: return "push-pull";
    case kPhaseLens: return "lens-pipelined";
    case kPhaseSync: return "pushpull-sync";
    default: return "?";
  }
}
const int kCmdPhaseScale = 1000000;  // cmd (meta.head) = phase * kCmdPhaseScale + round
const int kKeyIndexBits = 24;        // key = range begin + (phase << 24) + index
const int kMaxErrorsShown = 10;

struct Config {
  int rounds = 4;
  int keys = 48;
  int val_len = 4;
  uint64_t seed = 12345;
  double ftol = 0;
  bool inject_wrong = false;
};

// Returns 0 on success, 1 for --help, 2 for a bad option.
int ParseConfig(int argc, char* argv[], Config* cfg) {
  const app_options::Name names[] = {
      {"rounds", "EXACT_SUMS_ROUNDS"}, {"keys", "EXACT_SUMS_KEYS"},
      {"val-len", "EXACT_SUMS_VAL_LEN"}, {"seed", "EXACT_SUMS_SEED"},
      {"ftol", "EXACT_SUMS_FTOL"}, {"inject-wrong-expected", "EXACT_SUMS_INJECT_WRONG"}};
  const app_options::Syntax syntax{/*value_in_next_arg=*/true, /*flag=*/"inject-wrong-expected"};
  auto check = [cfg](const std::string& k, const std::string& v) {
    using app_options::ParseInt;
    if (k == "rounds") return ParseInt(v, 1, kCmdPhaseScale - 1, &cfg->rounds);
    if (k == "keys") return ParseInt(v, 1, (1 << kKeyIndexBits) - 1, &cfg->keys);
    if (k == "val-len") return ParseInt(v, 1, 1 << 20, &cfg->val_len);
    if (k == "seed") return ParseInt(v, 0, INT64_MAX, &cfg->seed);
    if (k == "inject-wrong-expected") return ParseInt(v, 0, 1, &cfg->inject_wrong);
    if (k == "ftol") {
      char* end = nullptr;
      cfg->ftol = std::strtod(v.c_str(), &end);
      return !v.empty() && *end == '\0' && cfg->ftol >= 0;
    }
    return true;
  };
  return app_options::ReadAndCheckOptions(argc, argv, names, {"exact_sums", kUsage}, syntax, check);
}

// ---------------------------------------------------------------------------
// The workload: who contributes what to which key, shared by workers and servers.

using app_hash::Hash;

enum Category { kAllWorkers = 0, kFixedSubset = 1, kOneWorker = 2, kRoundSubset = 3 };
const char* CategoryName(int c) {
  switch (c) {
    case kAllWorkers: return "all workers";
    case kFixedSubset: return "fixed subset";
    case kOneWorker: return "one worker";
    default: return "per-round subset";
  }
}

class Workload {
 public:
  Workload(const Config& cfg, int num_workers, int num_servers)
      : cfg_(cfg), workers_(num_workers), servers_(num_servers) {
    long long budget = (1LL << 24) - 1;  // |running integer sums| stay exact in a float
    long long terms = static_cast<long long>(num_workers) * cfg.rounds;
    int_mag_ = static_cast<int>(std::max(1LL, std::min(4096LL, budget / terms)));
  }

  int workers() const { return workers_; }
  int servers() const { return servers_; }
  int keys() const { return cfg_.keys; }
  int rounds() const { return cfg_.rounds; }

  // Blocks of 8 consecutive indexes (all category x kind combinations) per server.
  int ServerOf(int idx) const { return (idx / 8) % servers_; }
  static int CategoryOf(int idx) { return idx % 4; }
  static bool IsInteger(int idx) { return (idx / 4) % 2 == 0; }

  int Length(int phase, int idx) const {
    if (phase == kPhaseLens) return 1 + (idx * 5 + 3) % cfg_.val_len;
    return cfg_.val_len;
  }

  // The workers contributing to key idx of phase in round r (never empty; a proper
  // subset for the subset categories when there are several workers).
  std::vector<char> Contributors(int phase, int idx, int round) const {
    std::vector<char> in(workers_, 0);
    int cat = CategoryOf(idx);
    if (cat == kAllWorkers) {
      std::fill(in.begin(), in.end(), 1);
      return in;
    }
    if (cat == kOneWorker) {
      in[(idx / 4 + phase) % workers_] = 1;
      return in;
    }
    int r = cat == kFixedSubset ? -1 : round;
    int count = 0;
    for (int w = 0; w < workers_; ++w) {
      in[w] = Hash(cfg_.seed, {1, uint64_t(phase), uint64_t(idx), uint64_t(r), uint64_t(w)}) & 1;
      count += in[w];
    }
    int pick = static_cast<int>(Hash(cfg_.seed, {2, uint64_t(phase), uint64_t(idx), uint64_t(r)}) %
                                static_cast<uint64_t>(workers_));
    if (count == 0) in[pick] = 1;
    if (count == workers_ && workers_ > 1) in[pick] = 0;
    return in;
  }

  int NumContributors(int phase, int idx, int round) const {
    int n = 0;
    for (char c : Contributors(phase, idx, round)) n += c;
    return n;
  }

  // Integer-valued floats for integer keys, otherwise floats of several magnitudes;
  // every value is exactly representable as a float.
  float Value(int phase, int round, int idx, int worker, int elem) const {
    uint64_t h = Hash(cfg_.seed, {3, uint64_t(phase), uint64_t(round), uint64_t(idx),
                                  uint64_t(worker), uint64_t(elem)});
    if (IsInteger(idx)) {
      long long span = 2LL * int_mag_ + 1;
      return static_cast<float>(static_cast<long long>(h % span) - int_mag_);
    }
    long long mant = static_cast<long long>(h >> 40) - (1LL << 23);  // in [-2^23, 2^23)
    int exp = static_cast<int>((h >> 8) % 9) - 4;                     // 2^-4 .. 2^4
    return static_cast<float>(std::ldexp(static_cast<double>(mant), exp - 23));
  }

  ps::Key KeyOf(const std::vector<ps::Range>& ranges, int phase, int idx) const {
    return ranges[ServerOf(idx)].begin() + (static_cast<ps::Key>(phase) << kKeyIndexBits) +
           static_cast<ps::Key>(idx);
  }

 private:
  Config cfg_;
  int workers_, servers_;
  int int_mag_;
};

int Cmd(int phase, int round) { return phase * kCmdPhaseScale + round; }

// ---------------------------------------------------------------------------
// Worker

// All keys of one phase in key order, with their value offsets.
struct KeySet {
  int phase = 0;
  std::vector<ps::Key> keys;
  std::vector<int> idx, len;
  std::vector<size_t> off;
  size_t total = 0;

  KeySet(const Workload& wl, const std::vector<ps::Range>& ranges, int ph) : phase(ph) {
    std::vector<std::pair<ps::Key, int>> order;
    for (int i = 0; i < wl.keys(); ++i) order.push_back({wl.KeyOf(ranges, ph, i), i});
    std::sort(order.begin(), order.end());
    for (const auto& p : order) {
      keys.push_back(p.first);
      idx.push_back(p.second);
      len.push_back(wl.Length(ph, p.second));
      off.push_back(total);
      total += len.back();
    }
  }
  size_t size() const { return keys.size(); }
};

// What one worker pushes in one round: its keys (sorted) and values.
struct Contribution {
  std::vector<ps::Key> keys;
  std::vector<float> vals;
  std::vector<int> lens;
};

Contribution MakeContribution(const Workload& wl, const KeySet& ks, int round, int worker) {
  Contribution c;
  for (size_t p = 0; p < ks.size(); ++p) {
    if (!wl.Contributors(ks.phase, ks.idx[p], round)[worker]) continue;
    c.keys.push_back(ks.keys[p]);
    c.lens.push_back(ks.len[p]);
    for (int j = 0; j < ks.len[p]; ++j) c.vals.push_back(wl.Value(ks.phase, round, ks.idx[p], worker, j));
  }
  return c;
}

// Expected sums per value element of a KeySet, in double (exact for these inputs up to
// the float rounding the check allows for).
struct Expected {
  std::vector<double> sum, abs_sum;
  std::vector<int> terms;
  explicit Expected(const KeySet& ks) : sum(ks.total, 0), abs_sum(ks.total, 0), terms(ks.total, 0) {}
  void Add(const Workload& wl, const KeySet& ks, int round) {
    for (size_t p = 0; p < ks.size(); ++p) {
      std::vector<char> in = wl.Contributors(ks.phase, ks.idx[p], round);
      for (int w = 0; w < wl.workers(); ++w) {
        if (!in[w]) continue;
        for (int j = 0; j < ks.len[p]; ++j) {
          double v = wl.Value(ks.phase, round, ks.idx[p], w, j);
          sum[ks.off[p] + j] += v;
          abs_sum[ks.off[p] + j] += std::fabs(v);
          terms[ks.off[p] + j] += 1;
        }
      }
    }
  }
};

class Checker {
 public:
  Checker(const Config& cfg, const Workload& wl) : cfg_(cfg), wl_(wl) {}

  // Checks pulled values (and lens, when given) of the KeySet positions `pos`.
  void Check(const KeySet& ks, const std::vector<size_t>& pos, const Expected& exp, int round,
             const float* got, size_t got_size, const int* got_lens, size_t got_lens_size) {
    size_t need = 0;
    for (size_t p : pos) need += ks.len[p];
    std::string where = std::string(PhaseName(ks.phase)) + " round " + std::to_string(round);
    if (got_size != need) {
      Fail(where + ": pulled " + std::to_string(got_size) + " values, expected " + std::to_string(need));
      return;
    }
    if (got_lens && got_lens_size != pos.size()) {
      Fail(where + ": pulled " + std::to_string(got_lens_size) + " lens, expected " +
           std::to_string(pos.size()));
      return;
    }
    size_t at = 0;
    for (size_t q = 0; q < pos.size(); ++q) {
      size_t p = pos[q];
      int idx = ks.idx[p];
      std::ostringstream key;
      key << where << " key " << ks.keys[p] << " (index " << idx << ", server "
          << wl_.ServerOf(idx) << ", " << CategoryName(Workload::CategoryOf(idx)) << ", "
          << (Workload::IsInteger(idx) ? "integers" : "floats") << ")";
      if (got_lens && got_lens[q] != ks.len[p]) {
        Fail(key.str() + ": len " + std::to_string(got_lens[q]) + ", expected " + std::to_string(ks.len[p]));
      }
      for (int j = 0; j < ks.len[p]; ++j, ++at) {
        size_t e = ks.off[p] + j;
        double want = exp.sum[e];
        if (cfg_.inject_wrong && !injected_) {
          want += 1;
          injected_ = true;
        }
        double tol = 0;
        if (!Workload::IsInteger(idx)) {
          tol = cfg_.ftol > 0 ? cfg_.ftol * exp.abs_sum[e]
                              : (exp.terms[e] + 1) * std::ldexp(exp.abs_sum[e], -24);
        }
        ++checked_;
        double g = got[at];
        bool ok = Workload::IsInteger(idx) ? g == want : std::fabs(g - want) <= tol;
        if (!ok) {
          std::ostringstream m;
          m.precision(9);
          m << key.str() << " elem " << j << ": got " << g << ", expected " << want;
          if (tol > 0) m << " +- " << tol;
          m << " (" << exp.terms[e] << " contributions)";
          Fail(m.str());
          ++wrong_;
        }
      }
    }
  }

  void Fail(const std::string& msg) {
    ++failures_;
    if (failures_ <= kMaxErrorsShown) std::printf("exact_sums: FAIL %s\n", msg.c_str());
    std::fflush(stdout);
  }

  size_t checked() const { return checked_; }
  size_t wrong() const { return wrong_; }
  size_t failures() const { return failures_; }

 private:
  Config cfg_;
  const Workload& wl_;
  size_t checked_ = 0, wrong_ = 0, failures_ = 0;
  bool injected_ = false;
};

std::vector<size_t> AllPositions(const KeySet& ks) {
  std::vector<size_t> pos(ks.size());
  for (size_t p = 0; p < ks.size(); ++p) pos[p] = p;
  return pos;
}

void WorkerBarrier() { ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup); }

// Phase 1: each round every worker Pushes (copying API, several keys on several servers
// in one call) and waits; after a barrier all workers pull every key and check the
// running sum; a second barrier keeps the next round's pushes out of this round's pulls.
// Pulls use ZPull: BytePS's KVWorker::Pull into a std::vector does not compile.
void PhasePushPull(ps::KVWorker<float>* kv, const Workload& wl, const KeySet& ks, int me,
                   Checker* chk) {
  Expected exp(ks);
  ps::SArray<ps::Key> all_keys(ks.keys);
  for (int r = 0; r < wl.rounds(); ++r) {
    Contribution c = MakeContribution(wl, ks, r, me);
    if (!c.keys.empty()) kv->Wait(kv->Push(c.keys, c.vals, {}, Cmd(ks.phase, r)));
    exp.Add(wl, ks, r);
    WorkerBarrier();
    ps::SArray<float> got;
    kv->Wait(kv->ZPull(all_keys, &got, nullptr, Cmd(ks.phase, r)));
    chk->Check(ks, AllPositions(ks), exp, r, got.data(), got.size(), nullptr, 0);
    WorkerBarrier();
  }
}

// Phase 2: values of different lengths (lens); all rounds' zero-copy pushes are in
// flight at once; after a barrier, Pull with lens of every key, then of every other key.
void PhaseLens(ps::KVWorker<float>* kv, const Workload& wl, const KeySet& ks, int me,
               Checker* chk) {
  Expected exp(ks);
  std::vector<ps::SArray<ps::Key>> keys;
  std::vector<ps::SArray<float>> vals;
  std::vector<ps::SArray<int>> lens;
  std::vector<int> ts;
  for (int r = 0; r < wl.rounds(); ++r) {
    Contribution c = MakeContribution(wl, ks, r, me);
    exp.Add(wl, ks, r);
    if (c.keys.empty()) continue;
    keys.emplace_back(c.keys);
    vals.emplace_back(c.vals);
    lens.emplace_back(c.lens);
    ts.push_back(kv->ZPush(keys.back(), vals.back(), lens.back(), Cmd(ks.phase, r)));
  }
  for (int t : ts) kv->Wait(t);
  WorkerBarrier();
  int last = wl.rounds() - 1;
  ps::SArray<float> got;
  ps::SArray<int> got_lens;
  kv->Wait(kv->ZPull(ps::SArray<ps::Key>(ks.keys), &got, &got_lens, Cmd(ks.phase, last)));
  chk->Check(ks, AllPositions(ks), exp, last, got.data(), got.size(), got_lens.data(), got_lens.size());

  std::vector<size_t> odd;
  std::vector<ps::Key> odd_keys;
  for (size_t p = 1; p < ks.size(); p += 2) {
    odd.push_back(p);
    odd_keys.push_back(ks.keys[p]);
  }
  if (!odd.empty()) {
    got.clear();
    got_lens.clear();
    kv->Wait(kv->ZPull(ps::SArray<ps::Key>(odd_keys), &got, &got_lens, Cmd(ks.phase, last)));
    chk->Check(ks, odd, exp, last, got.data(), got.size(), got_lens.data(), got_lens.size());
  }
}

// Phase 3: per round, a zero-copy push and a pull issued back to back without waiting
// (BytePS's PS-lite has no KVWorker::PushPull). The servers answer a round's pull only
// when all of that round's contributions have arrived, and return that round's sum
// (dist_sync / BytePS style), so no barrier is needed.
void PhaseSync(ps::KVWorker<float>* kv, const Workload& wl, const KeySet& ks, int me,
               Checker* chk) {
  ps::SArray<ps::Key> all_keys(ks.keys);
  for (int r = 0; r < wl.rounds(); ++r) {
    Contribution c = MakeContribution(wl, ks, r, me);
    ps::SArray<ps::Key> keys(c.keys);
    ps::SArray<float> vals(c.vals);
    int push_ts = c.keys.empty() ? -1 : kv->ZPush(keys, vals, {}, Cmd(ks.phase, r));
    ps::SArray<float> got;
    int pull_ts = kv->ZPull(all_keys, &got, nullptr, Cmd(ks.phase, r));
    kv->Wait(pull_ts);
    if (push_ts >= 0) kv->Wait(push_ts);
    Expected exp(ks);
    exp.Add(wl, ks, r);
    chk->Check(ks, AllPositions(ks), exp, r, got.data(), got.size(), nullptr, 0);
  }
}

int RunWorker(const Config& cfg) {
  ps::KVWorker<float> kv(0, 0);
  int me = ps::MyRank();
  Workload wl(cfg, ps::NumWorkers(), ps::NumServers());
  const std::vector<ps::Range>& ranges = ps::Postoffice::Get()->GetServerKeyRanges();
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);  // apps exist

  Checker chk(cfg, wl);
  PhasePushPull(&kv, wl, KeySet(wl, ranges, kPhasePushPull), me, &chk);
  PhaseLens(&kv, wl, KeySet(wl, ranges, kPhaseLens), me, &chk);
  PhaseSync(&kv, wl, KeySet(wl, ranges, kPhaseSync), me, &chk);

  if (chk.failures() == 0 && chk.checked() > 0) {
    std::printf("exact_sums: OK checked %zu values (worker rank %d of %d, %d servers, %d rounds, "
                "%d keys, val_len %d)\n",
                chk.checked(), me, wl.workers(), wl.servers(), cfg.rounds, cfg.keys, cfg.val_len);
    std::fflush(stdout);
    return 0;
  }
  std::printf("exact_sums: FAIL worker rank %d: %zu of %zu values wrong, %zu problems in all\n", me,
              chk.wrong(), chk.checked(), chk.failures());
  std::fflush(stdout);
  return 1;
}

// ---------------------------------------------------------------------------
// Server

class Server {
 public:
  Server(const Config& cfg, const Workload& wl, int rank, ps::Range range)
      : cfg_(cfg), wl_(wl), rank_(rank), range_(range) {}

  void Handle(const ps::KVMeta& meta, const ps::KVPairs<float>& data, ps::KVServer<float>* srv) {
    std::lock_guard<std::mutex> lk(mu_);
    if (meta.push) {
      ++pushes_;
      HandlePush(meta, data);
      srv->Response(meta);
      AnswerReadyPulls(srv);
    } else {
      ++pulls_;
      HandlePull(meta, data, srv);
    }
  }

  // After Finalize: every owned key got exactly the expected number of contributions.
  int Finish() {
    std::lock_guard<std::mutex> lk(mu_);
    for (int phase : {kPhasePushPull, kPhaseLens, kPhaseSync}) {
      for (int i = 0; i < wl_.keys(); ++i) {
        if (wl_.ServerOf(i) != rank_) continue;
        long long want = 0;
        for (int r = 0; r < wl_.rounds(); ++r) want += wl_.NumContributors(phase, i, r);
        auto it = state_.find(Id(phase, i));
        long long got = it == state_.end() ? 0 : it->second.pushes;
        if (got != want) {
          Error(std::string(PhaseName(phase)) + " key index " + std::to_string(i) + ": " +
                std::to_string(got) + " contributions arrived, expected " + std::to_string(want));
        }
      }
    }
    if (!pending_.empty()) Error(std::to_string(pending_.size()) + " pulls never answered");
    if (errors_ == 0) {
      std::printf("exact_sums: server rank %d handled %lld pushes and %lld pulls, no errors\n", rank_,
                  pushes_, pulls_);
      std::fflush(stdout);
      return 0;
    }
    std::printf("exact_sums: FAIL server rank %d: %lld errors\n", rank_, errors_);
    std::fflush(stdout);
    return 1;
  }

 private:
  struct RoundState {
    std::vector<float> sum;
    int count = 0;
    std::set<int> senders;
  };
  struct KeyState {
    std::vector<float> sum;  // phases 1 and 2: running sum over all rounds
    long long pushes = 0;
    std::map<int, RoundState> rounds;  // phase 3: each round's sum
  };
  struct Pending {
    ps::KVMeta meta;
    std::vector<ps::Key> keys;
    int round;
  };
  // A decoded key: its phase and index, or phase 0 when it is not one of ours.
  struct Decoded {
    int phase = 0;
    int idx = 0;
    int len = 0;
  };

  static uint64_t Id(int phase, int idx) { return (static_cast<uint64_t>(phase) << 32) | idx; }

  void Error(const std::string& msg) {
    ++errors_;
    if (errors_ <= kMaxErrorsShown) std::printf("exact_sums: FAIL server rank %d: %s\n", rank_, msg.c_str());
    std::fflush(stdout);
  }

  Decoded Decode(ps::Key key, int cmd) {
    Decoded d;
    if (key < range_.begin() || key >= range_.end()) {
      Error("key " + std::to_string(key) + " is outside this server's range");
      return d;
    }
    ps::Key off = key - range_.begin();
    int phase = static_cast<int>(off >> kKeyIndexBits);
    int idx = static_cast<int>(off & ((1u << kKeyIndexBits) - 1));
    if (phase < kPhasePushPull || phase > kPhaseSync || idx >= wl_.keys() || wl_.ServerOf(idx) != rank_) {
      Error("key " + std::to_string(key) + " is not a key of this server");
      return d;
    }
    if (cmd / kCmdPhaseScale != phase) {
      Error("key " + std::to_string(key) + " of phase " + std::to_string(phase) + " came with cmd " +
            std::to_string(cmd));
      return d;
    }
    d.phase = phase;
    d.idx = idx;
    d.len = wl_.Length(phase, idx);
    return d;
  }

  KeyState& State(const Decoded& d) {
    KeyState& s = state_[Id(d.phase, d.idx)];
    if (s.sum.empty()) s.sum.assign(d.len, 0.0f);
    return s;
  }

  void HandlePush(const ps::KVMeta& meta, const ps::KVPairs<float>& data) {
    size_t n = data.keys.size();
    int round = meta.cmd % kCmdPhaseScale;
    if (n == 0) {
      Error("push without keys");
      return;
    }
    if (!data.lens.empty() && data.lens.size() != n) {
      Error("push with " + std::to_string(n) + " keys but " + std::to_string(data.lens.size()) + " lens");
      return;
    }
    std::vector<Decoded> dec;
    size_t total = 0;
    for (size_t k = 0; k < n; ++k) {
      dec.push_back(Decode(data.keys[k], meta.cmd));
      if (dec.back().phase == 0) return;
      size_t len = data.lens.empty() ? data.vals.size() / n : static_cast<size_t>(data.lens[k]);
      if (static_cast<int>(len) != dec.back().len) {
        Error("push of key " + std::to_string(data.keys[k]) + " has " + std::to_string(len) +
              " values, expected " + std::to_string(dec.back().len));
        return;
      }
      total += len;
    }
    bool want_lens = dec[0].phase == kPhaseLens;
    if (want_lens == data.lens.empty()) {
      Error(std::string("push in phase ") + PhaseName(dec[0].phase) + (want_lens ? " without" : " with") + " lens");
      return;
    }
    if (total != data.vals.size()) {
      Error("push carries " + std::to_string(data.vals.size()) + " values, its keys need " + std::to_string(total));
      return;
    }
    size_t at = 0;
    for (size_t k = 0; k < n; ++k) {
      const Decoded& d = dec[k];
      KeyState& s = State(d);
      ++s.pushes;
      std::vector<float>* dst = &s.sum;
      if (d.phase == kPhaseSync) {
        RoundState& rs = s.rounds[round];
        if (rs.sum.empty()) rs.sum.assign(d.len, 0.0f);
        int sender = ps::Postoffice::IDtoRank(meta.sender);
        if (!rs.senders.insert(sender).second) {
          Error("second push of key " + std::to_string(data.keys[k]) + " in round " + std::to_string(round) +
                " from worker rank " + std::to_string(sender));
        }
        ++rs.count;
        if (rs.count > wl_.NumContributors(d.phase, d.idx, round)) {
          Error("too many pushes of key " + std::to_string(data.keys[k]) + " in round " + std::to_string(round));
        }
        dst = &rs.sum;
      }
      for (int j = 0; j < d.len; ++j) (*dst)[j] += data.vals[at + j];
      at += d.len;
    }
  }

  bool RoundComplete(const Decoded& d, int round) {
    KeyState& s = State(d);
    auto it = s.rounds.find(round);
    return it != s.rounds.end() && it->second.count >= wl_.NumContributors(d.phase, d.idx, round);
  }

  void HandlePull(const ps::KVMeta& meta, const ps::KVPairs<float>& data, ps::KVServer<float>* srv) {
    Pending p;
    p.meta = meta;
    p.round = meta.cmd % kCmdPhaseScale;
    p.keys.assign(data.keys.begin(), data.keys.end());
    if (p.keys.empty()) {
      Error("pull without keys");
      srv->Response(meta);
      return;
    }
    Decoded d0 = Decode(p.keys[0], meta.cmd);
    if (d0.phase == kPhaseSync && !Ready(p)) {
      pending_.push_back(p);
      return;
    }
    Answer(p, srv);
  }

  bool Ready(const Pending& p) {
    for (ps::Key key : p.keys) {
      Decoded d = Decode(key, p.meta.cmd);
      if (d.phase != 0 && !RoundComplete(d, p.round)) return false;
    }
    return true;
  }

  void AnswerReadyPulls(ps::KVServer<float>* srv) {
    for (size_t i = 0; i < pending_.size();) {
      if (Ready(pending_[i])) {
        Answer(pending_[i], srv);
        pending_.erase(pending_.begin() + i);
      } else {
        ++i;
      }
    }
  }

  // Answers a pull with fresh arrays (the van may still be sending them after we return).
  void Answer(const Pending& p, ps::KVServer<float>* srv) {
    std::vector<float> vals;
    std::vector<int> lens;
    bool with_lens = false;
    for (ps::Key key : p.keys) {
      Decoded d = Decode(key, p.meta.cmd);
      int len = d.phase == 0 ? 1 : d.len;
      with_lens = with_lens || d.phase == kPhaseLens;
      lens.push_back(len);
      if (d.phase == 0) {
        vals.push_back(0.0f);
        continue;
      }
      KeyState& s = State(d);
      const std::vector<float>* src = &s.sum;
      if (d.phase == kPhaseSync) {
        RoundState& rs = s.rounds[p.round];
        if (rs.sum.empty()) rs.sum.assign(d.len, 0.0f);
        src = &rs.sum;
      }
      vals.insert(vals.end(), src->begin(), src->end());
    }
    ps::KVPairs<float> res;
    res.keys = ps::SArray<ps::Key>(p.keys);
    res.vals = ps::SArray<float>(vals);
    if (with_lens) res.lens = ps::SArray<int>(lens);
    srv->Response(p.meta, res);
  }

  Config cfg_;
  const Workload& wl_;
  int rank_;
  ps::Range range_;
  std::mutex mu_;
  std::unordered_map<uint64_t, KeyState> state_;
  std::vector<Pending> pending_;
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
    Server handler(cfg, wl, rank, ps::Postoffice::Get()->GetServerKeyRanges()[rank]);
    app_node::ServeUntilFinalize(&handler);
    return handler.Finish();
  };
  return app_node::RunRole(serve, [&cfg](int) { return RunWorker(cfg); });
}
