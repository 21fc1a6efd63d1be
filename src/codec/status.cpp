// status.cpp - one-line messages for hfpac::Status.
#include "codec/hfpac.h"

namespace hfpac {

const char* statusMessage(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::InvalidArgument: return "invalid argument: bad size, stride, pointer or option";
    case Status::TruncatedHeader: return "truncated stream: shorter than the 32-byte HFPaC header";
    case Status::BadMagic: return "not an HFPaC patch stream: bad magic";
    case Status::UnsupportedVersion: return "unsupported HFPaC version: newer than this decoder";
    case Status::InvalidHeader: return "corrupt HFPaC header: a field is out of range";
    case Status::TruncatedStream: return "truncated stream: the announced sections do not fit";
    case Status::SizeMismatch: return "corrupt stream: a section size disagrees with its contents";
    case Status::InvalidAreaTable: return "corrupt stream: invalid per-area bit width or count";
    case Status::InvalidProminent: return "corrupt stream: invalid prominent-point position";
    case Status::InvalidMask: return "corrupt stream: invalid masked-area code";
    case Status::InvalidBlock: return "corrupt stream: invalid 2DRBUC block";
    case Status::Unsupported: return "unsupported: this decoder lacks a feature the stream uses";
    case Status::OutOfRange: return "corrupt stream: a decoded sample is outside 0..65535";
  }
  return "unknown HFPaC status";
}

}  // namespace hfpac
