// ZKLOCK_API: what the shared library exports.
//
// The library is compiled with hidden visibility (CXX_VISIBILITY_PRESET hidden,
// VISIBILITY_INLINES_HIDDEN), so libzklock.so exports only what is marked ZKLOCK_API: the
// functions and classes the public headers declare out of line, including the detail::
// functions their templates call. The session engine (src/engine) and the state machines
// (src/sansio) stay internal. On ELF the attribute is the same for building and using the
// library and harmless in a static build, so this header is checked in rather than generated
// (GenerateExportHeader's output would need the build directory on every include path,
// including the test targets that compile the sources again).
#pragma once

#if defined(ZKLOCK_STATIC_DEFINE) || !(defined(__GNUC__) || defined(__clang__))
#define ZKLOCK_API
#else
#define ZKLOCK_API __attribute__((visibility("default")))
#endif
