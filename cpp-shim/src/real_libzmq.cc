#include "real_libzmq.h"

#include <dlfcn.h>
#include <link.h>

#include <vector>

#ifndef ZEBRA_SYSTEM_LIBZMQ
#error "build with -DZEBRA_SYSTEM_LIBZMQ=\"/path/to/libzmq.so.5\" (cpp-shim/Makefile does)"
#endif

namespace zebra {
namespace {

void self_marker() {}

// Base address of the object holding `addr`, or null.
const void *object_base(const void *addr) {
  Dl_info info{};
  if (addr == nullptr || dladdr(addr, &info) == 0) return nullptr;
  return info.dli_fbase;
}

const void *self_base() {
  static const void *base = object_base(reinterpret_cast<const void *>(&self_marker));
  return base;
}

bool is_foreign(const void *fn) { return fn != nullptr && object_base(fn) != self_base(); }

std::string object_file(const void *addr) {
  Dl_info info{};
  if (dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

// Fills every entry with `lookup(name)`; entries found in the shim itself stay null.
template <typename Lookup>
void fill(RealLibzmq &out, Lookup lookup) {
#define ZEBRA_API(ret, name, params, args)                          \
  if (void *p = lookup(#name); is_foreign(p)) {                     \
    out.name = reinterpret_cast<decltype(out.name)>(p);             \
  }
#include "api.def"
  ZEBRA_API(void *, zmq_ctx_new, (void), ())
  ZEBRA_API(void *, zmq_init, (int), ())
#undef ZEBRA_API
}

int collect_object(struct dl_phdr_info *info, size_t, void *names) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
    static_cast<std::vector<std::string> *>(names)->emplace_back(info->dlpi_name);
  }
  return 0;
}

bool from_loaded_objects(RealLibzmq &out) {
  std::vector<std::string> names;
  dl_iterate_phdr(collect_object, &names);
  for (const std::string &name : names) {
    // RTLD_NOLOAD only takes a reference to an object that is already loaded.
    void *handle = dlopen(name.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    void *ctx_new = dlsym(handle, "zmq_ctx_new");
    if (is_foreign(ctx_new)) {
      fill(out, [handle](const char *sym) { return dlsym(handle, sym); });
      out.origin = object_file(ctx_new);
      out.found_by = "loaded-object";
      return true;
    }
    dlclose(handle);
  }
  return false;
}

}  // namespace

bool find_real_libzmq(const std::string &configured_path, RealLibzmq &out, std::string &error) {
  if (void *next = dlsym(RTLD_NEXT, "zmq_ctx_new"); is_foreign(next)) {
    fill(out, [](const char *sym) { return dlsym(RTLD_NEXT, sym); });
    out.origin = object_file(next);
    out.found_by = "rtld-next";
    return true;
  }
  if (from_loaded_objects(out)) return true;

  const std::string path = configured_path.empty() ? ZEBRA_SYSTEM_LIBZMQ : configured_path;
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *why = dlerror();
    error = "no other libzmq is loaded in this process and " + path + " cannot be opened: " +
            (why != nullptr ? why : "unknown error") + " (set ZEBRA_REAL_LIBZMQ to the real libzmq)";
    return false;
  }
  void *ctx_new = dlsym(handle, "zmq_ctx_new");
  if (!is_foreign(ctx_new)) {
    error = path + " is this shim or has no zmq_ctx_new; set ZEBRA_REAL_LIBZMQ to the real libzmq";
    return false;
  }
  fill(out, [handle](const char *sym) { return dlsym(handle, sym); });
  out.origin = path;
  out.found_by = "path";
  return true;
}

bool open_private_libzmq(const std::string &configured_path, RealLibzmq &out, std::string &error) {
  const std::string path = configured_path.empty() ? ZEBRA_SYSTEM_LIBZMQ : configured_path;
  void *handle = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *why = dlerror();
    error = path + " cannot be opened in a namespace of its own: " + (why != nullptr ? why : "unknown error");
    return false;
  }
  fill(out, [handle](const char *sym) { return dlsym(handle, sym); });
  if (out.zmq_ctx_new == nullptr || out.zmq_socket == nullptr) {
    error = path + " has no zmq_ctx_new or zmq_socket";
    return false;
  }
  out.origin = path;
  out.found_by = "private-namespace";
  return true;
}

}  // namespace zebra
