// simd_rows.h - AVX2 versions of the decoder's per-point loops (internal): the layer-1
// prediction of a segment, and the layer-3 rows of an area (one row, or a whole full-width area).
//
// Chosen at run time (hasAvx2()); the scalar loops in decoder.cpp stay the reference and the
// fallback (tests/simd_rows_test.cpp compares them). Both give bit-identical results: the prediction is exact integer arithmetic carried
// in doubles (every value is an integer below 2^53, docs/format.md section 4), and the layer-3
// row is plain integer work.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hfpac::detail {

bool hasAvx2();

// Tests only: makes hasAvx2() false (true = the scalar loops everywhere, false = back to what the
// CPU has), so one process can compare the scalar and SIMD decoders on the same streams.
void setSimdDisabledForTesting(bool disabled);

// A whole segment block: rows j in [j0, j1), columns a in [0, len) of a segment whose 3 x 3
// control net is p (row-major, y first), written to out + (j - j0) * stride + a. Same values as
// evalSegment(). n = 2^segLog.
void predictSegmentAvx2(const int32_t p[3][3], int segLog, int j0, int j1, int len,
                        uint16_t* out, size_t stride);

// One full 16-point area row, in place: row[lx] = (row[lx] + corr[lx] + low_lx - half) ^ flip
// where low_lx is the b-bit field at bit + lx * b of `base` (b <= 16), and maskOut where bit lx
// of maskBits is set (masked points). Returns non-zero if any value before the flip is outside
// 0..65535 (masked points included: a valid stream gives them residual 0). Needs 16 readable
// bytes from the byte of field 12's first bit (it loads 16 from the first byte of fields 0, 4, 8
// and 12).
uint32_t lowRow16Avx2(const uint8_t* base, uint64_t bit, int b, const int32_t* corr,
                      uint16_t* row, uint16_t flip, uint32_t maskBits, uint16_t maskOut);

// A whole full-width area of `rows` rows, row ly at origin + ly * stride with its fields from bit
// + 16 * ly * b: lowRow16Avx2 on each row, the constants set up once. corr (16 per row) and
// maskRows (one maskBits per row) may be null for none.
uint32_t lowArea16Avx2(const uint8_t* base, uint64_t bit, int b, int rows, const int32_t* corr,
                       uint16_t* origin, size_t stride, uint16_t flip, const uint32_t* maskRows,
                       uint16_t maskOut);

}  // namespace hfpac::detail
