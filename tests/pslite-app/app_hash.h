// app_hash.h: the seeded hashing of the PS-lite apps in this directory. Every node of a job
// derives the same values, keys and pauses from the seed with these functions, so they must
// not change: a job's expected sums (and mf_train's results) depend on every bit.
#ifndef ZEBRA_PSLITE_APP_HASH_H_
#define ZEBRA_PSLITE_APP_HASH_H_

#include <cstdint>
#include <initializer_list>

namespace app_hash {

// splitmix64's output step: x plus the golden gamma, then mixed.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Folds v into h (boost's hash_combine step), then SplitMix64.
inline uint64_t Mix(uint64_t h, uint64_t v) { return SplitMix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))); }

// The hash of `fields` under `seed` (exact_sums, shapes): Mix of them in order, from Mix(0x5eed, seed).
inline uint64_t Hash(uint64_t seed, std::initializer_list<uint64_t> fields) {
  uint64_t h = Mix(0x5eed, seed);
  for (uint64_t f : fields) h = Mix(h, f);
  return h;
}

}  // namespace app_hash

#endif  // ZEBRA_PSLITE_APP_HASH_H_
