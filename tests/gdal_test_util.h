// gdal_test_util.h - GDAL helpers shared by tests that build their inputs with GDAL (the
// tests that include it link GDAL, through hfpack_lib or directly).
#pragma once

#include <gdal.h>
#include <gdal_utils.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hf_test {

// gdal_translate SRC DST with extra arguments (GTiff unless -of is given); a failure is a test
// failure (ASSERT inside: call it at the top level of a test, or check HasFatalFailure()).
inline void translate(const std::string& src, const std::string& dst, std::vector<std::string> args) {
  GDALAllRegister();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  GDALTranslateOptions* opts = GDALTranslateOptionsNew(argv.data(), nullptr);
  ASSERT_NE(opts, nullptr);
  GDALDatasetH in = GDALOpen(src.c_str(), GA_ReadOnly);
  ASSERT_NE(in, nullptr) << src;
  GDALDatasetH out = GDALTranslate(dst.c_str(), in, opts, nullptr);
  ASSERT_NE(out, nullptr) << dst;
  GDALClose(out);
  GDALClose(in);
  GDALTranslateOptionsFree(opts);
}

}  // namespace hf_test
