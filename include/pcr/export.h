// PCR_EXPORT marks what libpcr exports; the library is built with
// -fvisibility=hidden, so everything else stays inside it.
#pragma once

#if __cplusplus < 202002L
#error "pcr's headers need C++20: compile with -std=c++20 (or later)"
#endif

#define PCR_EXPORT [[gnu::visibility("default")]]
