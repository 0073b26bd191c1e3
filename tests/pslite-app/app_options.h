// app_options.h: the command line of the PS-lite apps in this directory.
//
// Every option is --name=VALUE (or "--name VALUE", for the apps that allow it) and has an
// environment variable; a non-empty variable gives the option's value, argv wins over it.
// -h or --help stops the reading (the app prints its usage). Errors go to stderr, worded
// "<app>: <what>" and followed by the app's usage text, or by " (see --help)" on the same
// line for an app whose usage is not a constant text. Each app keeps its own checks of the
// values (ranges, words); ReadAndCheckOptions reports the first value they refuse.
#ifndef ZEBRA_PSLITE_APP_OPTIONS_H_
#define ZEBRA_PSLITE_APP_OPTIONS_H_

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace app_options {

// An option: --name and its environment variable.
struct Name {
  const char* name;
  const char* env;
};

// How one app words its command-line errors.
struct Messages {
  const char* app;    // the program's name, first on every message
  const char* usage;  // printed after the message; nullptr: " (see --help)" ends the line

  // Prints "<app>: <what>" and the usage (or " (see --help)") to stderr.
  void Bad(const std::string& what) const {
    if (usage != nullptr) {
      std::fprintf(stderr, "%s: %s\n%s", app, what.c_str(), usage);
    } else {
      std::fprintf(stderr, "%s: %s (see --help)\n", app, what.c_str());
    }
  }
};

// How an app's arguments are spelled.
struct Syntax {
  bool value_in_next_arg;  // "--name VALUE" too; false: only --name=VALUE
  const char* flag;        // an option that may stand alone, meaning --flag=1 (nullptr: none)
};

// Reads the options named in `specs` (Names, or anything with `name` and `env` members) from the
// environment, then from argv, into *given (name -> value text; what *given already holds
// stays unless the environment or argv gives the option). Returns 0 when the app should go
// on to check the values, 1 for -h/--help, 2 after reporting an argument it cannot read.
template <class Spec, size_t N>
int ReadOptions(int argc, char* argv[], const Spec (&specs)[N], const Messages& msg, const Syntax& syntax,
                std::map<std::string, std::string>* given) {
  for (const Spec& s : specs) {
    const char* v = std::getenv(s.env);
    if (v != nullptr && *v != '\0') (*given)[s.name] = v;
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") return 1;
    size_t eq = arg.find('=');
    if (!syntax.value_in_next_arg) {
      if (arg.compare(0, 2, "--") != 0 || eq == std::string::npos) {
        msg.Bad("expected --option=value, got '" + arg + "'");
        return 2;
      }
    } else if (arg.compare(0, 2, "--") != 0) {
      msg.Bad("unexpected argument '" + arg + "'");
      return 2;
    }
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (syntax.flag != nullptr && name == syntax.flag) {
      value = "1";
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    bool known = false;
    for (const Spec& s : specs) known = known || name == s.name;
    if (!known) {
      msg.Bad("unknown option '--" + name + "'");
      return 2;
    }
    (*given)[name] = value;
  }
  return 0;
}

// ReadOptions, then check(name, value) -> bool for every option given, in name order; the
// first value it refuses is reported as "bad value 'VALUE' for --NAME". Returns 0, 1 or 2
// as ReadOptions does.
template <class Spec, size_t N, class Check>
int ReadAndCheckOptions(int argc, char* argv[], const Spec (&specs)[N], const Messages& msg, const Syntax& syntax,
                        Check check) {
  std::map<std::string, std::string> given;
  int read = ReadOptions(argc, argv, specs, msg, syntax, &given);
  if (read != 0) return read;
  for (const auto& kv : given) {
    if (!check(kv.first, kv.second)) {
      msg.Bad("bad value '" + kv.second + "' for --" + kv.first);
      return 2;
    }
  }
  return 0;
}

// Parses the whole of `s` as a decimal integer in [lo, hi] into *out (an integer or bool
// type that holds [lo, hi]); false, leaving *out alone, when it is not one.
template <class T>
bool ParseInt(const std::string& s, long long lo, long long hi, T* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<T>(v);
  return true;
}

}  // namespace app_options

#endif  // ZEBRA_PSLITE_APP_OPTIONS_H_
