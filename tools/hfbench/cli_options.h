// cli_options.h - what the hfbench subcommands' command lines (CLI11 through tools/cli/cli.h)
// share: the conventions of the hand-written parsers they replaced (a repeated option's last
// value wins; integers in decimal; numbers as strtod reads them, finite).
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "cli.h"

namespace hfbench {

// A repeated option keeps its last value (CLI11 refuses the second one by default).
inline void lastValueWins(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// An integer option in lo..hi, in decimal: CLI11 alone reads "010" as octal 8.
inline CLI::Option* addInt(CLI::App& app, const std::string& name, int& value, int lo, int hi,
                           const std::string& help) {
  return app.add_option(name, value, help)
      ->check(CLI::Range(lo, hi))
      ->transform([](std::string v) {
        while (v.size() > 1 && v[0] == '0' && std::isdigit(static_cast<unsigned char>(v[1]))) v.erase(0, 1);
        return v;
      })
      ->capture_default_str();
}

// A finite number (strtod; "nan", "inf" and trailing characters refused), > 0 if `positive`.
inline CLI::Validator finiteNumber(bool positive) {
  return CLI::Validator(
      [positive](std::string& v) {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        if (end != v.c_str() && !*end && std::isfinite(d) && (!positive || d > 0)) return std::string();
        return (positive ? "wants a number > 0, got '" : "wants a finite number, got '") + v + "'";
      },
      positive ? "NUMBER > 0" : "NUMBER");
}

}  // namespace hfbench
