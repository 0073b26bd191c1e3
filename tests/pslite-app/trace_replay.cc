// trace_replay: a PS-lite application (BytePS's PS-lite) that replays the pushes of a Zebra
// push trace (rust/zebra-hotkeys/TRACE.md, e.g. from `zebra trace gen`) with seeded
// integer values, checks every pulled sum exactly and prints the pushed pairs per second.
//
// Every node reads the whole trace. Trace worker w's records go to job worker w mod W; a
// job worker pushes, round after round, the keys its records hold for that round (merged,
// sorted). Servers count each key's contributions and check them at the end. See README.md.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

#include "app_hash.h"
#include "app_options.h"
#include "app_node.h"

namespace {

const char kUsage[] =
    "usage: trace_replay --trace=FILE [--rounds=N] [--seed=N] [--check=round|end]\n"
    "Run one copy per PS-lite node (scheduler, servers, workers) with the same options,\n"
    "e.g. scripts/pslaunch.py --servers 2 --workers 2 -- trace_replay --trace=oa.trace\n"
    "  --trace=FILE     Zebra push trace (zebra trace gen, or a ZEBRA_TRACE recording);\n"
    "                   trace worker w is replayed by job worker w mod W (env TRACE_REPLAY_FILE)\n"
    "  --rounds=N       replay only the first N rounds of the trace (default 0 = all;\n"
    "                   env TRACE_REPLAY_ROUNDS)\n"
    "  --seed=N         seed of the pushed values (default 7; env TRACE_REPLAY_SEED)\n"
    "  --check=round    after each round: barrier, pull this worker's keys of the round and\n"
    "                   check the running sums (default; env TRACE_REPLAY_CHECK)\n"
    "  --check=end      push every round back to back, then pull and check every key once\n";

const int kMaxShown = 10;
const uint32_t kMaxRecordBytes = 1u << 24;

struct Options {
  std::string trace;
  long long rounds = 0;
  unsigned long long seed = 7;
  bool check_each_round = true;
};

// Returns 0 to run, 1 after --help, 2 on a bad option.
int ParseOptions(int argc, char* argv[], Options* o) {
  const app_options::Messages msg{"trace_replay", kUsage};
  const app_options::Name names[] = {{"trace", "TRACE_REPLAY_FILE"},
                                     {"rounds", "TRACE_REPLAY_ROUNDS"},
                                     {"seed", "TRACE_REPLAY_SEED"},
                                     {"check", "TRACE_REPLAY_CHECK"}};
  const app_options::Syntax syntax{/*value_in_next_arg=*/false, /*flag=*/nullptr};  // --name=VALUE only
  auto check = [o](const std::string& k, const std::string& v) {
    char* end = nullptr;
    bool ok = !v.empty();
    if (k == "trace") {
      o->trace = v;
    } else if (k == "rounds") {
      o->rounds = std::strtoll(v.c_str(), &end, 10);
      ok = ok && *end == '\0' && o->rounds >= 0;
    } else if (k == "seed") {
      o->seed = std::strtoull(v.c_str(), &end, 10);
      ok = ok && *end == '\0' && v[0] != '-';
    } else if (k == "check") {
      ok = v == "round" || v == "end";
      o->check_each_round = v == "round";
    }
    return ok;
  };
  int parsed = app_options::ReadAndCheckOptions(argc, argv, names, msg, syntax, check);
  if (parsed != 0) return parsed;
  if (o->trace.empty()) {
    msg.Bad("--trace=FILE is required");
    return 2;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// The trace: a checked reader of rust/zebra-hotkeys/TRACE.md, version 1.

struct KeyLen {
  uint64_t key;
  uint32_t len;
};

struct TraceRecord {
  uint32_t worker = 0, round = 0;
  std::vector<KeyLen> pairs;
};

class BodyCursor {
 public:
  BodyCursor(const unsigned char* p, size_t n) : p_(p), n_(n) {}
  bool Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= n_) return false;
      unsigned char b = p_[at_++];
      uint64_t bits = b & 0x7f;
      if (shift == 63 && bits > 1) return false;
      v |= bits << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;
  }
  bool U32(uint32_t* out) {
    uint64_t v = 0;
    if (!Varint(&v) || v > UINT32_MAX) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  }
  bool AtEnd() const { return at_ == n_; }

 private:
  const unsigned char* p_;
  size_t n_, at_ = 0;
};

uint32_t Le32(const unsigned char* b) {
  return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
}

bool ReadTrace(const std::string& path, std::vector<TraceRecord>* out, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *err = path + ": cannot open";
    return false;
  }
  unsigned char h[16];
  if (!in.read(reinterpret_cast<char*>(h), 16) || std::memcmp(h, "ZEBRATRC", 8) != 0) {
    *err = path + ": not a Zebra trace";
    return false;
  }
  if (h[8] != 1 || h[9] != 0 || h[10] != 16 || h[11] != 0 || Le32(h + 12) != 0) {
    *err = path + ": unsupported trace version or header";
    return false;
  }
  uint64_t offset = 16;
  std::vector<unsigned char> body;
  for (;;) {
    unsigned char prefix[4];
    in.read(reinterpret_cast<char*>(prefix), 4);
    if (in.gcount() == 0) break;
    uint32_t len = in.gcount() == 4 ? Le32(prefix) : kMaxRecordBytes + 1;
    std::string where = path + ": record at byte " + std::to_string(offset);
    if (len > kMaxRecordBytes) {
      *err = where + ": truncated or too long";
      return false;
    }
    body.resize(len);
    if (len > 0 && !in.read(reinterpret_cast<char*>(body.data()), len)) {
      *err = where + ": truncated";
      return false;
    }
    BodyCursor c(body.data(), len);
    TraceRecord r;
    uint64_t n = 0;
    if (!c.U32(&r.worker) || !c.U32(&r.round) || !c.Varint(&n) || n > len / 2) {
      *err = where + ": malformed header fields";
      return false;
    }
    uint64_t key = 0;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t zz = 0;
      uint32_t values = 0;
      if (!c.Varint(&zz) || !c.U32(&values)) {
        *err = where + ": malformed pair";
        return false;
      }
      key += (zz >> 1) ^ (~(zz & 1) + 1);  // zigzag delta, wrapping
      if (values > 0) r.pairs.push_back({key, values});
    }
    if (!c.AtEnd()) {
      *err = where + ": bytes after the last pair";
      return false;
    }
    out->push_back(std::move(r));
    offset += 4 + len;
  }
  return true;
}

// ---------------------------------------------------------------------------
// The replay plan, the same on every node.

struct Push {
  std::vector<ps::Key> keys;
  std::vector<int> lens;
  std::vector<int> times;  // how many trace pairs this key merges (value multiplier)
};

struct Plan {
  int workers = 0;
  std::vector<uint32_t> rounds;          // trace rounds replayed, ascending
  std::vector<std::vector<Push>> push;   // [job worker][round index]
  std::unordered_map<ps::Key, int> len;  // value count of every key
  std::unordered_map<ps::Key, long long> contributions;  // pushes that carry the key
  int magnitude = 1;                     // values are integers in [-magnitude, magnitude]
};

bool MakePlan(const std::vector<TraceRecord>& trace, int workers, long long max_rounds,
              ps::Key key_end, Plan* plan, std::string* err) {
  plan->workers = workers;
  for (const auto& r : trace) plan->rounds.push_back(r.round);
  std::sort(plan->rounds.begin(), plan->rounds.end());
  plan->rounds.erase(std::unique(plan->rounds.begin(), plan->rounds.end()), plan->rounds.end());
  if (max_rounds > 0 && plan->rounds.size() > static_cast<size_t>(max_rounds)) plan->rounds.resize(max_rounds);
  std::unordered_map<uint32_t, size_t> round_index;
  for (size_t i = 0; i < plan->rounds.size(); ++i) round_index[plan->rounds[i]] = i;
  std::vector<std::vector<std::map<ps::Key, int>>> merged(
      workers, std::vector<std::map<ps::Key, int>>(plan->rounds.size()));
  for (const auto& r : trace) {
    auto ri = round_index.find(r.round);
    if (ri == round_index.end()) continue;
    auto& m = merged[r.worker % workers][ri->second];
    for (const auto& p : r.pairs) {
      if (p.key >= key_end) {
        *err = "key " + std::to_string(p.key) + " is beyond the last server's key range";
        return false;
      }
      auto known = plan->len.emplace(p.key, static_cast<int>(p.len));
      if (known.first->second != static_cast<int>(p.len)) {
        *err = "key " + std::to_string(p.key) + " has value counts " +
               std::to_string(known.first->second) + " and " + std::to_string(p.len);
        return false;
      }
      m[p.key] += 1;
    }
  }
  std::unordered_map<ps::Key, long long> terms;
  plan->push.assign(workers, std::vector<Push>(plan->rounds.size()));
  for (int w = 0; w < workers; ++w) {
    for (size_t i = 0; i < plan->rounds.size(); ++i) {
      Push& p = plan->push[w][i];
      for (const auto& kv : merged[w][i]) {
        p.keys.push_back(kv.first);
        p.lens.push_back(plan->len[kv.first]);
        p.times.push_back(kv.second);
        plan->contributions[kv.first] += 1;
        terms[kv.first] += kv.second;
      }
    }
  }
  long long most = 1;
  for (const auto& kv : terms) most = std::max(most, kv.second);
  plan->magnitude = static_cast<int>(std::max(1LL, std::min(64LL, ((1LL << 24) - 1) / most)));
  return true;
}

using app_hash::SplitMix64;

// The value job worker w pushes for element e of key k in round index ri (times its merge count).
float Value(const Plan& plan, uint64_t seed, size_t ri, int w, ps::Key k, int e, int times) {
  uint64_t h = SplitMix64(SplitMix64(SplitMix64(SplitMix64(seed ^ ri) ^ static_cast<uint64_t>(w)) ^ k) ^
                          static_cast<uint64_t>(e));
  long long span = 2LL * plan.magnitude + 1;
  return static_cast<float>((static_cast<long long>(h % span) - plan.magnitude) * times);
}

// ---------------------------------------------------------------------------
// Worker.

class Expected {
 public:
  Expected(const Plan& plan, uint64_t seed) : plan_(plan), seed_(seed) {}
  // Adds every worker's contributions of round index ri.
  void AddRound(size_t ri) {
    for (int w = 0; w < plan_.workers; ++w) {
      const Push& p = plan_.push[w][ri];
      for (size_t i = 0; i < p.keys.size(); ++i) {
        std::vector<double>& s = sum_[p.keys[i]];
        s.resize(p.lens[i], 0.0);
        for (int e = 0; e < p.lens[i]; ++e) s[e] += Value(plan_, seed_, ri, w, p.keys[i], e, p.times[i]);
      }
    }
  }
  const std::vector<double>& Of(ps::Key k) { return sum_[k]; }

 private:
  const Plan& plan_;
  uint64_t seed_;
  std::unordered_map<ps::Key, std::vector<double>> sum_;
};

struct WorkerResult {
  long long pairs = 0, values = 0, checked = 0, wrong = 0;
  double push_seconds = 0;
};

void CheckPull(const std::vector<ps::Key>& keys, const ps::SArray<float>& got, const ps::SArray<int>& got_lens,
               Expected* exp, const std::string& where, WorkerResult* res) {
  size_t at = 0;
  bool shape_ok = got_lens.size() == keys.size();
  for (size_t i = 0; shape_ok && i < keys.size(); ++i) {
    const std::vector<double>& want = exp->Of(keys[i]);
    if (got_lens[i] != static_cast<int>(want.size()) || at + want.size() > got.size()) {
      shape_ok = false;
      break;
    }
    for (size_t e = 0; e < want.size(); ++e, ++at) {
      ++res->checked;
      if (got[at] != want[e]) {
        if (++res->wrong <= kMaxShown) {
          std::printf("trace_replay: FAIL %s key %llu elem %zu: got %.1f, expected %.1f\n", where.c_str(),
                      static_cast<unsigned long long>(keys[i]), e, got[at], want[e]);
        }
      }
    }
  }
  if (!shape_ok || at != got.size()) {
    ++res->wrong;
    std::printf("trace_replay: FAIL %s: pulled %zu values and %zu lens for %zu keys\n", where.c_str(),
                got.size(), got_lens.size(), keys.size());
  }
}

WorkerResult RunWorker(const Options& o, const Plan& plan, int me) {
  ps::KVWorker<float> kv(0, 0);
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);  // every app exists
  Expected exp(plan, o.seed);
  WorkerResult res;
  std::vector<ps::Key> all_mine;
  for (size_t ri = 0; ri < plan.rounds.size(); ++ri) {
    const Push& p = plan.push[me][ri];
    if (!p.keys.empty()) {
      std::vector<float> vals;
      for (size_t i = 0; i < p.keys.size(); ++i) {
        for (int e = 0; e < p.lens[i]; ++e) vals.push_back(Value(plan, o.seed, ri, me, p.keys[i], e, p.times[i]));
      }
      ps::SArray<ps::Key> keys(p.keys);
      ps::SArray<float> sv(vals);
      ps::SArray<int> lens(p.lens);
      auto t0 = std::chrono::steady_clock::now();
      kv.Wait(kv.ZPush(keys, sv, lens, static_cast<int>(ri)));
      res.push_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      res.pairs += static_cast<long long>(p.keys.size());
      res.values += static_cast<long long>(vals.size());
      all_mine.insert(all_mine.end(), p.keys.begin(), p.keys.end());
    }
    exp.AddRound(ri);
    if (!o.check_each_round) continue;
    ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
    if (!p.keys.empty()) {
      ps::SArray<float> got;
      ps::SArray<int> got_lens;
      kv.Wait(kv.ZPull(ps::SArray<ps::Key>(p.keys), &got, &got_lens, static_cast<int>(ri)));
      CheckPull(p.keys, got, got_lens, &exp, "round " + std::to_string(plan.rounds[ri]), &res);
    }
    ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
  }
  if (!o.check_each_round) {
    ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
    std::sort(all_mine.begin(), all_mine.end());
    all_mine.erase(std::unique(all_mine.begin(), all_mine.end()), all_mine.end());
    if (!all_mine.empty()) {
      ps::SArray<float> got;
      ps::SArray<int> got_lens;
      kv.Wait(kv.ZPull(ps::SArray<ps::Key>(all_mine), &got, &got_lens, static_cast<int>(plan.rounds.size())));
      CheckPull(all_mine, got, got_lens, &exp, "end", &res);
    }
  }
  return res;
}

// ---------------------------------------------------------------------------
// Server.

class Server {
 public:
  Server(const Plan& plan, int rank, ps::Range range) : plan_(plan), rank_(rank), range_(range) {}

  void Handle(const ps::KVMeta& meta, const ps::KVPairs<float>& data, ps::KVServer<float>* srv) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = data.keys.size();
    if (meta.push) {
      ++pushes_;
      bool by_lens = data.lens.size() == n;
      if (!by_lens && (n == 0 || data.vals.size() % n != 0)) {
        Error("push of " + std::to_string(n) + " keys with " + std::to_string(data.vals.size()) + " values");
        n = 0;
      }
      size_t at = 0;
      for (size_t i = 0; i < n; ++i) {
        int len = by_lens ? data.lens[i] : static_cast<int>(data.vals.size() / n);
        std::vector<float>* s = Slot(data.keys[i], len);
        if (s == nullptr || at + len > data.vals.size()) break;
        for (int e = 0; e < len; ++e) (*s)[e] += data.vals[at + e];
        at += len;
        ++got_[data.keys[i]];
      }
      srv->Response(meta);
      return;
    }
    ++pulls_;
    ps::KVPairs<float> res;
    std::vector<float> vals;
    std::vector<int> lens;
    for (size_t i = 0; i < n; ++i) {
      auto it = sum_.find(data.keys[i]);
      if (it == sum_.end()) {
        Error("pull of key " + std::to_string(data.keys[i]) + " that was never pushed");
        lens.push_back(0);
        continue;
      }
      vals.insert(vals.end(), it->second.begin(), it->second.end());
      lens.push_back(static_cast<int>(it->second.size()));
    }
    res.keys = data.keys;
    res.vals = ps::SArray<float>(vals);
    res.lens = ps::SArray<int>(lens);
    srv->Response(meta, res);
  }

  int Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& kv : plan_.contributions) {
      if (kv.first < range_.begin() || kv.first >= range_.end()) continue;
      auto it = got_.find(kv.first);
      long long got = it == got_.end() ? 0 : it->second;
      if (got != kv.second) {
        Error("key " + std::to_string(kv.first) + ": " + std::to_string(got) + " contributions, expected " +
              std::to_string(kv.second));
      }
    }
    if (errors_ == 0) {
      std::printf("trace_replay: server rank %d handled %lld pushes and %lld pulls of %zu keys, no errors\n",
                  rank_, pushes_, pulls_, sum_.size());
    } else {
      std::printf("trace_replay: FAIL server rank %d: %lld errors\n", rank_, errors_);
    }
    std::fflush(stdout);
    return errors_ == 0 ? 0 : 1;
  }

 private:
  std::vector<float>* Slot(ps::Key key, int len) {
    auto want = plan_.len.find(key);
    if (key < range_.begin() || key >= range_.end() || want == plan_.len.end()) {
      Error("push of key " + std::to_string(key) + ", not a trace key of this server");
      return nullptr;
    }
    if (len != want->second) {
      Error("key " + std::to_string(key) + " pushed with " + std::to_string(len) + " values, the trace has " +
            std::to_string(want->second));
      return nullptr;
    }
    std::vector<float>& s = sum_[key];
    s.resize(len, 0.0f);
    return &s;
  }

  void Error(const std::string& msg) {
    if (++errors_ <= kMaxShown) std::printf("trace_replay: FAIL server rank %d: %s\n", rank_, msg.c_str());
    std::fflush(stdout);
  }

  const Plan& plan_;
  int rank_;
  ps::Range range_;
  std::mutex mu_;
  std::unordered_map<ps::Key, std::vector<float>> sum_;
  std::unordered_map<ps::Key, long long> got_;
  long long pushes_ = 0, pulls_ = 0, errors_ = 0;
};

}  // namespace

int main(int argc, char* argv[]) {
  Options o;
  int parsed = ParseOptions(argc, argv, &o);
  if (parsed == 1) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (parsed != 0) return 2;
  std::vector<TraceRecord> trace;
  std::string err;
  if (!ReadTrace(o.trace, &trace, &err)) {
    std::fprintf(stderr, "trace_replay: %s\n", err.c_str());
    return 2;
  }

  ps::Start(0, argv[0]);
  const std::vector<ps::Range>& ranges = ps::Postoffice::Get()->GetServerKeyRanges();
  Plan plan;
  bool planned = ps::IsScheduler() || MakePlan(trace, ps::NumWorkers(), o.rounds, ranges.back().end(), &plan, &err);
  trace.clear();
  if (!planned) std::printf("trace_replay: FAIL %s\n", err.c_str());
  auto serve = [&](int rank) {
    Server handler(plan, rank, ranges[rank]);
    app_node::ServeUntilFinalize(&handler);
    return planned ? handler.Finish() : 2;
  };
  auto work = [&](int me) {
    if (!planned) {
      ps::KVWorker<float> kv(0, 0);
      ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);
      return 2;
    }
    auto t0 = std::chrono::steady_clock::now();
    WorkerResult r = RunWorker(o, plan, me);
    double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool ok = r.wrong == 0 && r.checked > 0;
    std::printf("trace_replay: %s worker rank %d of %d: %zu rounds, %lld pairs (%lld values) pushed, "
                "%lld values checked, %lld wrong; push %.0f pairs/s (%.3f s in push+wait), %.3f s in all\n",
                ok ? "OK" : "FAIL", me, plan.workers, plan.rounds.size(), r.pairs, r.values, r.checked, r.wrong,
                r.push_seconds > 0 ? r.pairs / r.push_seconds : 0.0, r.push_seconds, all);
    std::fflush(stdout);
    return ok ? 0 : 1;
  };
  return app_node::RunRole(serve, work);
}
