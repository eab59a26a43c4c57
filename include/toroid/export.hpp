// What libtoroid exports. The library is built with hidden visibility (lib/CMakeLists.txt), so
// its shared object's dynamic symbols are exactly what the public headers declare between
// TOROID_API_BEGIN and TOROID_API_END: the engine, the schedules and the model stay inside
// (tests/package/exports_test.cmake reads `nm -D` and fails on any other namespace).
#pragma once

#if defined(__GNUC__)
#define TOROID_API_BEGIN _Pragma("GCC visibility push(default)")
#define TOROID_API_END _Pragma("GCC visibility pop")
#else
#define TOROID_API_BEGIN
#define TOROID_API_END
#endif

// On the library's own types that public classes name (an Impl behind a pointer): kept out of
// the exports though declared inside an exported class.
#if defined(__GNUC__)
#define TOROID_HIDDEN __attribute__((visibility("hidden")))
#else
#define TOROID_HIDDEN
#endif
