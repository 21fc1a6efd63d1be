// cli.h - the tools' command lines through CLI11 (issue 15: a well-kept library instead of
// hand-written parsers), with the project's conventions: `--help` prints the generated usage on
// stdout and exits 0; any other parse error is one "Error: ... (TOOL --help)" line on stderr.
//
//   CLI::App app{"what the tool does", "hftool"};
//   app.add_option("--size", size, "samples per side")->check(CLI::Range(33, 32769));
//   int status = 0;
//   if (!hfcli::parse(app, argc, argv, status)) return status;
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

namespace hfcli {

// False when the program should exit now with `status` (0 after --help, else `errorStatus`).
inline bool parse(CLI::App& app, int argc, char** argv, int& status, int errorStatus = 1) {
  try {
    app.parse(argc, argv);
    return true;
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    status = 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "Error: %s (%s --help)\n", e.what(), app.get_name().c_str());
    status = errorStatus;
  }
  return false;
}

}  // namespace hfcli
