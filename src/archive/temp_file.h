// temp_file.h - the temporary file a writer fills before its atomic rename onto PATH (the archive
// writer, hfpack's part writer): PATH.tmp.XXXXXX next to PATH, mode 0644, locked (flock LOCK_EX)
// by this process until it closes the descriptor, so that a later writer of PATH can tell it from
// the temporary file of a writer that died (kill -9, a crash, power loss) and remove those.
#pragma once

#include <string>

namespace hfa {

// Removes PATH.tmp.* files that no live writer holds locked and that are at least 2 s old (a
// writer between mkstemp and flock is not mistaken for a dead one), then creates and locks a new
// one. Returns its descriptor (tmpPath set), or -1 with a one-line `error`.
int createWriterTemporary(const std::string& path, std::string& tmpPath, std::string& error);

}  // namespace hfa
